/*
 * faultshim: an LD_PRELOAD library that fails, shortens, delays, pauses or
 * kills at the N-th file-system call matching a path, or logs every matching
 * call. Built and driven by tools/reliability/src/shim.ts; the rule syntax is
 * documented in ../README.md ("The fault shim").
 *
 *   LLMCP_FAULTSHIM_RULES  rules separated by ';', each a ','-separated list
 *                          of key=value: op=open|write|...  path=<substring,
 *                          glob, or ^exact path>  nth=<N | N+ | every>  action=<action>
 *                          ok=1 (count only calls that succeeded; after-actions only).
 *                          Values may use %XX escapes (for ',', ';', '%').
 *   LLMCP_FAULTSHIM_LOG    file to which matching calls are appended (one
 *                          tab-separated line per call) for `action=log` rules,
 *                          and every injected fault.
 *   LLMCP_FAULTSHIM_PAUSE_TIMEOUT_MS  a paused call that is not released
 *                          within this time SIGKILLs its process (default
 *                          300000), so an abandoned test cannot leave it behind.
 *
 * Intercepted (glibc 2.34+ names included): open open64 __open_2 __open64_2
 * openat openat64 __openat_2 __openat64_2 creat creat64; write pwrite pwrite64
 * writev pwritev pwritev64 pwritev2 pwritev64v2; fsync fdatasync; rename
 * renameat renameat2; mkdir mkdirat mkdtemp; unlink unlinkat rmdir remove;
 * link linkat; symlink symlinkat; close (to forget fd → path).
 *
 * Robustness: real functions come from dlsym(RTLD_NEXT); calls made by the shim
 * itself go straight to them (a thread-local guard); the fd → path table is
 * lock-free (atomic pointers, written at open, cleared at close) so a write
 * from a signal handler never takes a lock; counters are atomic, so libuv's
 * thread pool and worker threads count correctly; a pause holds a per-rule
 * mutex so two threads never pause on one rule at once.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define OP_OPEN 1u
#define OP_WRITE 2u
#define OP_FSYNC 4u
#define OP_RENAME 8u
#define OP_MKDIR 16u
#define OP_UNLINK 32u
#define OP_LINK 64u
#define OP_SYMLINK 128u
#define OP_ANY 255u

enum action_kind { ACT_LOG, ACT_FAIL, ACT_SHORT, ACT_DELAY, ACT_KILL, ACT_KILL_AFTER, ACT_PAUSE, ACT_PAUSE_AFTER };

struct rule {
  unsigned ops;
  char *pattern;
  int glob;  /* 1: fnmatch(3) on the whole path */
  int exact; /* 1: the whole path equals the pattern ('^' prefix) */
  unsigned long nth; /* 0 = every */
  int from;          /* nth and every later */
  enum action_kind action;
  int ok; /* 1: only calls that succeeded match (checked after the call; for pause-after, kill-after, log) */
  int err;
  long delay_ms;
  char *dir;
  unsigned long count; /* atomic */
  pthread_mutex_t pause_lock;
  char text[160];
};

#define MAX_RULES 64
static struct rule rules[MAX_RULES];
static int rule_count;
static unsigned watched_ops; /* union of the ops of every rule */
static unsigned fd_ops;      /* ops that look paths up by fd (write, fsync) */
static int log_fd = -1;
static long pause_timeout_ms = 300000;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread int in_shim __attribute__((tls_model("initial-exec")));

/* fd → absolute path, only for fds whose path matched a write/fsync rule at open time. */
#define MAX_FDS 65536
static char *fd_paths[MAX_FDS];

/* ---- real functions ---------------------------------------------------- */

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real___open_2)(const char *, int);
static int (*real___open64_2)(const char *, int);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real___openat_2)(int, const char *, int);
static int (*real___openat64_2)(int, const char *, int);
static int (*real_creat)(const char *, mode_t);
static int (*real_creat64)(const char *, mode_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev64)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);
static ssize_t (*real_pwritev64v2)(int, const struct iovec *, int, off_t, int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned int);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_mkdirat)(int, const char *, mode_t);
static char *(*real_mkdtemp)(char *);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_rmdir)(const char *);
static int (*real_remove)(const char *);
static int (*real_link)(const char *, const char *);
static int (*real_linkat)(int, const char *, int, const char *, int);
static int (*real_symlink)(const char *, const char *);
static int (*real_symlinkat)(const char *, int, const char *);
static int (*real_close)(int);

#define RESOLVE(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)

static void resolve_all(void) {
  RESOLVE(open);
  RESOLVE(open64);
  RESOLVE(__open_2);
  RESOLVE(__open64_2);
  RESOLVE(openat);
  RESOLVE(openat64);
  RESOLVE(__openat_2);
  RESOLVE(__openat64_2);
  RESOLVE(creat);
  RESOLVE(creat64);
  RESOLVE(write);
  RESOLVE(pwrite);
  RESOLVE(pwrite64);
  RESOLVE(writev);
  RESOLVE(pwritev);
  RESOLVE(pwritev64);
  RESOLVE(pwritev2);
  RESOLVE(pwritev64v2);
  RESOLVE(fsync);
  RESOLVE(fdatasync);
  RESOLVE(rename);
  RESOLVE(renameat);
  RESOLVE(renameat2);
  RESOLVE(mkdir);
  RESOLVE(mkdirat);
  RESOLVE(mkdtemp);
  RESOLVE(unlink);
  RESOLVE(unlinkat);
  RESOLVE(rmdir);
  RESOLVE(remove);
  RESOLVE(link);
  RESOLVE(linkat);
  RESOLVE(symlink);
  RESOLVE(symlinkat);
  RESOLVE(close);
}

/* ---- rules ------------------------------------------------------------- */

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* In-place %XX decoding. */
static void unescape(char *s) {
  char *w = s;
  for (char *r = s; *r != '\0'; r++) {
    if (r[0] == '%' && hexval(r[1]) >= 0 && hexval(r[2]) >= 0) {
      *w++ = (char)(hexval(r[1]) * 16 + hexval(r[2]));
      r += 2;
    } else {
      *w++ = *r;
    }
  }
  *w = '\0';
}

static const struct { const char *name; int value; } ERRNOS[] = {
  {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EACCES", EACCES}, {"EDQUOT", EDQUOT}, {"EROFS", EROFS}, {"EPERM", EPERM},
  {"EEXIST", EEXIST}, {"ENOENT", ENOENT}, {"EMFILE", EMFILE}, {"ENFILE", ENFILE}, {"EBUSY", EBUSY}, {"EXDEV", EXDEV},
  {"EINTR", EINTR}, {"EAGAIN", EAGAIN}, {"ENOTEMPTY", ENOTEMPTY}, {"EISDIR", EISDIR}, {"ENOTDIR", ENOTDIR},
  {"ENAMETOOLONG", ENAMETOOLONG}, {"EFBIG", EFBIG}, {"ELOOP", ELOOP}, {"ETXTBSY", ETXTBSY}, {"ENOMEM", ENOMEM},
};

static int parse_errno(const char *s) {
  for (size_t i = 0; i < sizeof ERRNOS / sizeof ERRNOS[0]; i++)
    if (strcmp(s, ERRNOS[i].name) == 0) return ERRNOS[i].value;
  char *end;
  long v = strtol(s, &end, 10);
  return *end == '\0' && v > 0 ? (int)v : -1;
}

static unsigned parse_ops(char *s) {
  unsigned ops = 0;
  for (char *save = NULL, *tok = strtok_r(s, "|", &save); tok != NULL; tok = strtok_r(NULL, "|", &save)) {
    if (strcmp(tok, "open") == 0) ops |= OP_OPEN;
    else if (strcmp(tok, "write") == 0) ops |= OP_WRITE;
    else if (strcmp(tok, "fsync") == 0) ops |= OP_FSYNC;
    else if (strcmp(tok, "rename") == 0) ops |= OP_RENAME;
    else if (strcmp(tok, "mkdir") == 0) ops |= OP_MKDIR;
    else if (strcmp(tok, "unlink") == 0) ops |= OP_UNLINK;
    else if (strcmp(tok, "link") == 0) ops |= OP_LINK;
    else if (strcmp(tok, "symlink") == 0) ops |= OP_SYMLINK;
    else if (strcmp(tok, "any") == 0) ops |= OP_ANY;
    else return 0;
  }
  return ops;
}

static void bad_rule(const char *text, const char *why) {
  char msg[512];
  int n = snprintf(msg, sizeof msg, "faultshim: ignoring rule \"%s\": %s\n", text, why);
  if (n > 0) (void)syscall(SYS_write, 2, msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1));
}

static int parse_rule(char *text, struct rule *r) {
  memset(r, 0, sizeof *r);
  snprintf(r->text, sizeof r->text, "%s", text);
  r->nth = 0;
  r->from = 1;
  int have_action = 0;
  for (char *save = NULL, *kv = strtok_r(text, ",", &save); kv != NULL; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (eq == NULL) return bad_rule(r->text, "expected key=value"), 0;
    *eq = '\0';
    char *key = kv;
    char *value = eq + 1;
    unescape(value);
    if (strcmp(key, "op") == 0) {
      r->ops = parse_ops(value);
      if (r->ops == 0) return bad_rule(r->text, "unknown op"), 0;
    } else if (strcmp(key, "path") == 0) {
      r->exact = value[0] == '^';
      r->pattern = strdup(r->exact ? value + 1 : value);
      r->glob = !r->exact && strpbrk(value, "*?[") != NULL;
    } else if (strcmp(key, "nth") == 0) {
      if (strcmp(value, "every") == 0) {
        r->nth = 0;
        r->from = 1;
      } else {
        char *end;
        unsigned long n = strtoul(value, &end, 10);
        if (n == 0 || (*end != '\0' && strcmp(end, "+") != 0)) return bad_rule(r->text, "nth must be N, N+ or every"), 0;
        r->nth = n;
        r->from = *end == '+';
      }
    } else if (strcmp(key, "ok") == 0) {
      r->ok = strcmp(value, "1") == 0;
    } else if (strcmp(key, "action") == 0) {
      have_action = 1;
      if (strcmp(value, "log") == 0) r->action = ACT_LOG;
      else if (strcmp(value, "short") == 0) r->action = ACT_SHORT;
      else if (strcmp(value, "kill") == 0) r->action = ACT_KILL;
      else if (strcmp(value, "kill-after") == 0) r->action = ACT_KILL_AFTER;
      else if (strncmp(value, "fail:", 5) == 0) {
        r->action = ACT_FAIL;
        r->err = parse_errno(value + 5);
        if (r->err < 0) return bad_rule(r->text, "unknown errno"), 0;
      } else if (strncmp(value, "delay:", 6) == 0) {
        r->action = ACT_DELAY;
        r->delay_ms = strtol(value + 6, NULL, 10);
      } else if (strncmp(value, "pause:", 6) == 0) {
        r->action = ACT_PAUSE;
        r->dir = strdup(value + 6);
      } else if (strncmp(value, "pause-after:", 12) == 0) {
        r->action = ACT_PAUSE_AFTER;
        r->dir = strdup(value + 12);
      } else return bad_rule(r->text, "unknown action"), 0;
    } else {
      return bad_rule(r->text, "unknown key"), 0;
    }
  }
  if (r->ops == 0) return bad_rule(r->text, "op missing"), 0;
  if (!have_action) return bad_rule(r->text, "action missing"), 0;
  if (r->ok && r->action != ACT_PAUSE_AFTER && r->action != ACT_KILL_AFTER && r->action != ACT_LOG) return bad_rule(r->text, "ok=1 needs pause-after, kill-after or log"), 0;
  if (r->pattern == NULL) r->pattern = strdup("");
  pthread_mutex_init(&r->pause_lock, NULL);
  return 1;
}

static void init(void) {
  in_shim++;
  resolve_all();
  const char *env = getenv("LLMCP_FAULTSHIM_RULES");
  if (env != NULL) {
    char *copy = strdup(env);
    for (char *save = NULL, *tok = strtok_r(copy, ";", &save); tok != NULL && rule_count < MAX_RULES; tok = strtok_r(NULL, ";", &save)) {
      if (*tok == '\0') continue;
      if (parse_rule(tok, &rules[rule_count])) {
        watched_ops |= rules[rule_count].ops;
        rule_count++;
      }
    }
    free(copy);
  }
  for (int i = 0; i < rule_count; i++)
    if (rules[i].ops & (OP_WRITE | OP_FSYNC)) fd_ops |= OP_WRITE | OP_FSYNC;
  const char *timeout = getenv("LLMCP_FAULTSHIM_PAUSE_TIMEOUT_MS");
  if (timeout != NULL) pause_timeout_ms = strtol(timeout, NULL, 10);
  const char *log = getenv("LLMCP_FAULTSHIM_LOG");
  if (log != NULL && *log != '\0') log_fd = (int)syscall(SYS_openat, AT_FDCWD, log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  in_shim--;
}

static void ensure_init(void) { pthread_once(&init_once, init); }

__attribute__((constructor)) static void faultshim_constructor(void) { ensure_init(); }

/* ---- helpers ----------------------------------------------------------- */

/* Absolute form of `path` relative to `dirfd` (no normalization). */
static void absolute(int dirfd, const char *path, char *out, size_t size) {
  if (path == NULL) {
    out[0] = '\0';
    return;
  }
  if (path[0] == '/') {
    snprintf(out, size, "%s", path);
    return;
  }
  char base[PATH_MAX];
  base[0] = '\0';
  if (dirfd == AT_FDCWD) {
    if (syscall(SYS_getcwd, base, sizeof base) < 0) base[0] = '\0';
  } else {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(link, base, sizeof base - 1);
    base[n > 0 ? n : 0] = '\0';
  }
  snprintf(out, size, "%s/%s", base, path);
}

static int path_matches(const struct rule *r, const char *path) {
  if (path == NULL || path[0] == '\0') return 0;
  if (r->exact) return strcmp(r->pattern, path) == 0;
  if (r->glob) return fnmatch(r->pattern, path, 0) == 0;
  return strstr(path, r->pattern) != NULL;
}

static int any_rule_matches(unsigned op, const char *path) {
  for (int i = 0; i < rule_count; i++)
    if ((rules[i].ops & op) && path_matches(&rules[i], path)) return 1;
  return 0;
}

static void remember_fd(int fd, const char *path) {
  if (fd < 0 || fd >= MAX_FDS) return;
  char *copy = NULL;
  if ((fd_ops & (OP_WRITE | OP_FSYNC)) && (any_rule_matches(OP_WRITE, path) || any_rule_matches(OP_FSYNC, path))) copy = strdup(path);
  /* The previous string (if any) is leaked on purpose: a concurrent reader may still hold it. */
  __atomic_store_n(&fd_paths[fd], copy, __ATOMIC_RELEASE);
}

static const char *fd_path(int fd) {
  if (fd < 0 || fd >= MAX_FDS) return NULL;
  return __atomic_load_n(&fd_paths[fd], __ATOMIC_ACQUIRE);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void die(void) {
  kill(getpid(), SIGKILL);
  for (;;) pause();
}

static const char *op_name(unsigned op) {
  switch (op) {
    case OP_OPEN: return "open";
    case OP_WRITE: return "write";
    case OP_FSYNC: return "fsync";
    case OP_RENAME: return "rename";
    case OP_MKDIR: return "mkdir";
    case OP_UNLINK: return "unlink";
    case OP_LINK: return "link";
    case OP_SYMLINK: return "symlink";
    default: return "?";
  }
}

static void log_line(unsigned op, const char *func, const char *path, const char *path2, const char *what, long result, int err) {
  if (log_fd < 0) return;
  char line[3 * PATH_MAX];
  int n = snprintf(line, sizeof line, "%s\t%s\t%s\t%s\t%s\t%ld\t%d\t%d\t%ld\n", op_name(op), func, path == NULL ? "" : path, path2 == NULL ? "" : path2, what,
                   result, err, (int)getpid(), (long)syscall(SYS_gettid));
  if (n > 0) (void)syscall(SYS_write, log_fd, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
}

/* Creates dir/reached (atomically, with the call described), waits for dir/release, then consumes both. */
static void pause_at(struct rule *r, unsigned op, const char *func, const char *path, const char *path2, const char *when) {
  pthread_mutex_lock(&r->pause_lock);
  char tmp[PATH_MAX], reached[PATH_MAX], release[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s/.reached-%d", r->dir, (int)getpid());
  snprintf(reached, sizeof reached, "%s/reached", r->dir);
  snprintf(release, sizeof release, "%s/release", r->dir);
  int fd = (int)syscall(SYS_openat, AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    char line[3 * PATH_MAX];
    int n = snprintf(line, sizeof line, "%s\t%s\t%s\t%s\t%s\t%d\n", op_name(op), func, path == NULL ? "" : path, path2 == NULL ? "" : path2, when, (int)getpid());
    if (n > 0) (void)syscall(SYS_write, fd, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
    (void)syscall(SYS_close, fd);
    (void)syscall(SYS_rename, tmp, reached);
  }
  long waited = 0;
  while (syscall(SYS_access, release, F_OK) != 0) {
    sleep_ms(1);
    waited += 1;
    if (pause_timeout_ms > 0 && waited > pause_timeout_ms) die();
  }
  (void)syscall(SYS_unlink, release);
  (void)syscall(SYS_unlink, reached);
  pthread_mutex_unlock(&r->pause_lock);
}

/* What to do around one call. */
struct plan {
  int fail;       /* errno to fail with, or 0 */
  int shorten;    /* write only half */
  int kill_after; /* SIGKILL after the call */
  struct rule *pause_after;
  struct rule *hit; /* the first non-log rule that hit (for the log) */
  int logged;
};

static int rule_hits(struct rule *r) {
  unsigned long n = __atomic_add_fetch(&r->count, 1, __ATOMIC_SEQ_CST);
  if (r->nth == 0) return 1;
  return r->from ? n >= r->nth : n == r->nth;
}

/* Runs the before-call part of every matching rule; fills `p` with the rest. */
static void before(unsigned op, const char *func, const char *path, const char *path2, struct plan *p) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < rule_count; i++) {
    struct rule *r = &rules[i];
    if (r->ok || !(r->ops & op)) continue;
    if (!path_matches(r, path) && !path_matches(r, path2)) continue;
    if (!rule_hits(r)) continue;
    if (r->action == ACT_LOG) {
      p->logged = 1;
      continue;
    }
    if (p->fail) continue;
    if (p->hit == NULL) p->hit = r;
    switch (r->action) {
      case ACT_FAIL:
        log_line(op, func, path, path2, r->text, -1, r->err);
        p->fail = r->err;
        break;
      case ACT_SHORT:
        if (op == OP_WRITE) p->shorten = 1;
        break;
      case ACT_DELAY:
        sleep_ms(r->delay_ms);
        break;
      case ACT_KILL:
        log_line(op, func, path, path2, r->text, 0, 0);
        die();
        break;
      case ACT_KILL_AFTER:
        p->kill_after = 1;
        break;
      case ACT_PAUSE:
        pause_at(r, op, func, path, path2, "before");
        break;
      case ACT_PAUSE_AFTER:
        p->pause_after = r;
        break;
      default:
        break;
    }
  }
}

static void after(unsigned op, const char *func, const char *path, const char *path2, struct plan *p, long result, int err) {
  /* Rules that only count successful calls are matched now that the result is known. */
  if (result >= 0) {
    for (int i = 0; i < rule_count; i++) {
      struct rule *r = &rules[i];
      if (!r->ok || !(r->ops & op)) continue;
      if (!path_matches(r, path) && !path_matches(r, path2)) continue;
      if (!rule_hits(r)) continue;
      if (r->action == ACT_LOG) p->logged = 1;
      else if (r->action == ACT_KILL_AFTER) p->kill_after = 1;
      else if (r->action == ACT_PAUSE_AFTER && p->pause_after == NULL) p->pause_after = r;
      if (r->action != ACT_LOG && p->hit == NULL) p->hit = r;
    }
  }
  if (p->logged) log_line(op, func, path, path2, "call", result, result < 0 ? err : 0);
  if (p->hit != NULL && p->hit->action != ACT_FAIL) log_line(op, func, path, path2, p->hit->text, result, result < 0 ? err : 0);
  if (p->pause_after != NULL) pause_at(p->pause_after, op, func, path, path2, "after");
  if (p->kill_after) die();
}

#define ACTIVE(op) (!in_shim && (ensure_init(), (watched_ops & (op)) != 0))

/* ---- open ---------------------------------------------------------------- */

static int open_common(const char *func, int dirfd, const char *path, int flags, mode_t mode, int (*call)(int, const char *, int, mode_t, void *), void *real) {
  if (in_shim) return call(dirfd, path, flags, mode, real);
  ensure_init();
  if (!(watched_ops & OP_OPEN) && !(fd_ops & (OP_WRITE | OP_FSYNC))) return call(dirfd, path, flags, mode, real);
  in_shim++;
  char abs[PATH_MAX * 2];
  absolute(dirfd, path, abs, sizeof abs);
  struct plan p;
  memset(&p, 0, sizeof p);
  if (watched_ops & OP_OPEN) before(OP_OPEN, func, abs, NULL, &p);
  if (p.fail) {
    in_shim--;
    errno = p.fail;
    return -1;
  }
  int fd = call(dirfd, path, flags, mode, real);
  int err = errno;
  if (fd >= 0) remember_fd(fd, abs);
  after(OP_OPEN, func, abs, NULL, &p, fd, err);
  in_shim--;
  errno = err;
  return fd;
}

static int call_open(int dirfd, const char *path, int flags, mode_t mode, void *real) {
  (void)dirfd;
  return ((int (*)(const char *, int, ...))real)(path, flags, mode);
}
static int call_openat(int dirfd, const char *path, int flags, mode_t mode, void *real) {
  return ((int (*)(int, const char *, int, ...))real)(dirfd, path, flags, mode);
}
static int call_open_2(int dirfd, const char *path, int flags, mode_t mode, void *real) {
  (void)dirfd;
  (void)mode;
  return ((int (*)(const char *, int))real)(path, flags);
}
static int call_openat_2(int dirfd, const char *path, int flags, mode_t mode, void *real) {
  (void)mode;
  return ((int (*)(int, const char *, int))real)(dirfd, path, flags);
}
static int call_creat(int dirfd, const char *path, int flags, mode_t mode, void *real) {
  (void)dirfd;
  (void)flags;
  return ((int (*)(const char *, mode_t))real)(path, mode);
}

#define NEEDS_MODE(flags) (((flags) & O_CREAT) != 0 || ((flags) & O_TMPFILE) == O_TMPFILE)
#define TAKE_MODE(flags)           \
  mode_t mode = 0;                 \
  if (NEEDS_MODE(flags)) {         \
    va_list ap;                    \
    va_start(ap, flags);           \
    mode = (mode_t)va_arg(ap, int); \
    va_end(ap);                    \
  }

int open(const char *path, int flags, ...) {
  TAKE_MODE(flags);
  if (real_open == NULL) resolve_all();
  return open_common("open", AT_FDCWD, path, flags, mode, call_open, (void *)real_open);
}
int open64(const char *path, int flags, ...) {
  TAKE_MODE(flags);
  if (real_open64 == NULL) resolve_all();
  return open_common("open64", AT_FDCWD, path, flags, mode, call_open, (void *)real_open64);
}
int __open_2(const char *path, int flags) {
  if (real___open_2 == NULL) resolve_all();
  return open_common("__open_2", AT_FDCWD, path, flags, 0, call_open_2, (void *)real___open_2);
}
int __open64_2(const char *path, int flags) {
  if (real___open64_2 == NULL) resolve_all();
  return open_common("__open64_2", AT_FDCWD, path, flags, 0, call_open_2, (void *)real___open64_2);
}
int openat(int dirfd, const char *path, int flags, ...) {
  TAKE_MODE(flags);
  if (real_openat == NULL) resolve_all();
  return open_common("openat", dirfd, path, flags, mode, call_openat, (void *)real_openat);
}
int openat64(int dirfd, const char *path, int flags, ...) {
  TAKE_MODE(flags);
  if (real_openat64 == NULL) resolve_all();
  return open_common("openat64", dirfd, path, flags, mode, call_openat, (void *)real_openat64);
}
int __openat_2(int dirfd, const char *path, int flags) {
  if (real___openat_2 == NULL) resolve_all();
  return open_common("__openat_2", dirfd, path, flags, 0, call_openat_2, (void *)real___openat_2);
}
int __openat64_2(int dirfd, const char *path, int flags) {
  if (real___openat64_2 == NULL) resolve_all();
  return open_common("__openat64_2", dirfd, path, flags, 0, call_openat_2, (void *)real___openat64_2);
}
int creat(const char *path, mode_t mode) {
  if (real_creat == NULL) resolve_all();
  return open_common("creat", AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, call_creat, (void *)real_creat);
}
int creat64(const char *path, mode_t mode) {
  if (real_creat64 == NULL) resolve_all();
  return open_common("creat64", AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, call_creat, (void *)real_creat64);
}

int close(int fd) {
  if (real_close == NULL) resolve_all();
  if (fd >= 0 && fd < MAX_FDS && __atomic_load_n(&fd_paths[fd], __ATOMIC_RELAXED) != NULL) __atomic_store_n(&fd_paths[fd], NULL, __ATOMIC_RELEASE);
  return real_close(fd);
}

/* ---- write and fsync ------------------------------------------------------ */

/* Half of `count` (at least 1 byte, so a writer's loop always makes progress). */
static size_t half(size_t count) { return count > 1 ? count / 2 : count; }

/* Copies `iov` into `out`, cut to half its total length; returns the new count. */
static int half_iov(const struct iovec *iov, int n, struct iovec *out, int max) {
  size_t total = 0;
  for (int i = 0; i < n; i++) total += iov[i].iov_len;
  size_t left = half(total);
  int k = 0;
  for (int i = 0; i < n && i < max && left > 0; i++) {
    out[k] = iov[i];
    if (out[k].iov_len > left) out[k].iov_len = left;
    left -= out[k].iov_len;
    k++;
  }
  return k;
}

#define FD_GUARD(op, fd)                                                 \
  const char *tracked = NULL;                                            \
  int active = !in_shim && (ensure_init(), (watched_ops & (op)) != 0) && \
               (tracked = fd_path(fd)) != NULL;

#define FD_BEFORE(op, func)              \
  in_shim++;                             \
  struct plan p;                         \
  before(op, func, tracked, NULL, &p);   \
  if (p.fail) {                          \
    in_shim--;                           \
    errno = p.fail;                      \
    return -1;                           \
  }

#define FD_AFTER(op, func, result)            \
  int err = errno;                            \
  after(op, func, tracked, NULL, &p, (long)(result), err); \
  in_shim--;                                  \
  errno = err;

ssize_t write(int fd, const void *buf, size_t count) {
  if (real_write == NULL) resolve_all();
  FD_GUARD(OP_WRITE, fd);
  if (!active) return real_write(fd, buf, count);
  FD_BEFORE(OP_WRITE, "write");
  ssize_t r = real_write(fd, buf, p.shorten ? half(count) : count);
  FD_AFTER(OP_WRITE, "write", r);
  return r;
}
ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
  if (real_pwrite == NULL) resolve_all();
  FD_GUARD(OP_WRITE, fd);
  if (!active) return real_pwrite(fd, buf, count, offset);
  FD_BEFORE(OP_WRITE, "pwrite");
  ssize_t r = real_pwrite(fd, buf, p.shorten ? half(count) : count, offset);
  FD_AFTER(OP_WRITE, "pwrite", r);
  return r;
}
ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
  if (real_pwrite64 == NULL) resolve_all();
  FD_GUARD(OP_WRITE, fd);
  if (!active) return real_pwrite64(fd, buf, count, offset);
  FD_BEFORE(OP_WRITE, "pwrite64");
  ssize_t r = real_pwrite64(fd, buf, p.shorten ? half(count) : count, offset);
  FD_AFTER(OP_WRITE, "pwrite64", r);
  return r;
}

#define IOV_CALL(call)                                 \
  struct iovec cut[64];                                \
  const struct iovec *use = iov;                       \
  int n = iovcnt;                                      \
  if (p.shorten) {                                     \
    n = half_iov(iov, iovcnt, cut, 64);                \
    use = cut;                                         \
  }                                                    \
  ssize_t r = call;

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
  if (real_writev == NULL) resolve_all();
  FD_GUARD(OP_WRITE, fd);
  if (!active) return real_writev(fd, iov, iovcnt);
  FD_BEFORE(OP_WRITE, "writev");
  IOV_CALL(real_writev(fd, use, n));
  FD_AFTER(OP_WRITE, "writev", r);
  return r;
}
ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
  if (real_pwritev == NULL) resolve_all();
  FD_GUARD(OP_WRITE, fd);
  if (!active) return real_pwritev(fd, iov, iovcnt, offset);
  FD_BEFORE(OP_WRITE, "pwritev");
  IOV_CALL(real_pwritev(fd, use, n, offset));
  FD_AFTER(OP_WRITE, "pwritev", r);
  return r;
}
ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
  if (real_pwritev64 == NULL) resolve_all();
  FD_GUARD(OP_WRITE, fd);
  if (!active) return real_pwritev64(fd, iov, iovcnt, offset);
  FD_BEFORE(OP_WRITE, "pwritev64");
  IOV_CALL(real_pwritev64(fd, use, n, offset));
  FD_AFTER(OP_WRITE, "pwritev64", r);
  return r;
}
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 26))
ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags) {
  if (real_pwritev2 == NULL) resolve_all();
  FD_GUARD(OP_WRITE, fd);
  if (!active) return real_pwritev2(fd, iov, iovcnt, offset, flags);
  FD_BEFORE(OP_WRITE, "pwritev2");
  IOV_CALL(real_pwritev2(fd, use, n, offset, flags));
  FD_AFTER(OP_WRITE, "pwritev2", r);
  return r;
}
ssize_t pwritev64v2(int fd, const struct iovec *iov, int iovcnt, off_t offset, int flags) {
  if (real_pwritev64v2 == NULL) resolve_all();
  FD_GUARD(OP_WRITE, fd);
  if (!active) return real_pwritev64v2(fd, iov, iovcnt, offset, flags);
  FD_BEFORE(OP_WRITE, "pwritev64v2");
  IOV_CALL(real_pwritev64v2(fd, use, n, offset, flags));
  FD_AFTER(OP_WRITE, "pwritev64v2", r);
  return r;
}
#endif

int fsync(int fd) {
  if (real_fsync == NULL) resolve_all();
  FD_GUARD(OP_FSYNC, fd);
  if (!active) return real_fsync(fd);
  FD_BEFORE(OP_FSYNC, "fsync");
  int r = real_fsync(fd);
  FD_AFTER(OP_FSYNC, "fsync", r);
  return r;
}
int fdatasync(int fd) {
  if (real_fdatasync == NULL) resolve_all();
  FD_GUARD(OP_FSYNC, fd);
  if (!active) return real_fdatasync(fd);
  FD_BEFORE(OP_FSYNC, "fdatasync");
  int r = real_fdatasync(fd);
  FD_AFTER(OP_FSYNC, "fdatasync", r);
  return r;
}

/* ---- path operations ------------------------------------------------------ */

#define PATH_BEFORE(op, func, a, b)    \
  in_shim++;                           \
  struct plan p;                       \
  before(op, func, a, b, &p);          \
  if (p.fail) {                        \
    in_shim--;                         \
    errno = p.fail;                    \
    return -1;                         \
  }

#define PATH_AFTER(op, func, a, b, result)  \
  int err = errno;                          \
  after(op, func, a, b, &p, (long)(result), err); \
  in_shim--;                                \
  errno = err;

int rename(const char *from, const char *to) {
  if (real_rename == NULL) resolve_all();
  if (!ACTIVE(OP_RENAME)) return real_rename(from, to);
  char a[PATH_MAX * 2], b[PATH_MAX * 2];
  absolute(AT_FDCWD, from, a, sizeof a);
  absolute(AT_FDCWD, to, b, sizeof b);
  PATH_BEFORE(OP_RENAME, "rename", a, b);
  int r = real_rename(from, to);
  PATH_AFTER(OP_RENAME, "rename", a, b, r);
  return r;
}
int renameat(int fromfd, const char *from, int tofd, const char *to) {
  if (real_renameat == NULL) resolve_all();
  if (!ACTIVE(OP_RENAME)) return real_renameat(fromfd, from, tofd, to);
  char a[PATH_MAX * 2], b[PATH_MAX * 2];
  absolute(fromfd, from, a, sizeof a);
  absolute(tofd, to, b, sizeof b);
  PATH_BEFORE(OP_RENAME, "renameat", a, b);
  int r = real_renameat(fromfd, from, tofd, to);
  PATH_AFTER(OP_RENAME, "renameat", a, b, r);
  return r;
}
int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
  if (real_renameat2 == NULL) resolve_all();
  if (!ACTIVE(OP_RENAME)) return real_renameat2(fromfd, from, tofd, to, flags);
  char a[PATH_MAX * 2], b[PATH_MAX * 2];
  absolute(fromfd, from, a, sizeof a);
  absolute(tofd, to, b, sizeof b);
  PATH_BEFORE(OP_RENAME, "renameat2", a, b);
  int r = real_renameat2(fromfd, from, tofd, to, flags);
  PATH_AFTER(OP_RENAME, "renameat2", a, b, r);
  return r;
}

int mkdir(const char *path, mode_t mode) {
  if (real_mkdir == NULL) resolve_all();
  if (!ACTIVE(OP_MKDIR)) return real_mkdir(path, mode);
  char a[PATH_MAX * 2];
  absolute(AT_FDCWD, path, a, sizeof a);
  PATH_BEFORE(OP_MKDIR, "mkdir", a, NULL);
  int r = real_mkdir(path, mode);
  PATH_AFTER(OP_MKDIR, "mkdir", a, NULL, r);
  return r;
}
int mkdirat(int dirfd, const char *path, mode_t mode) {
  if (real_mkdirat == NULL) resolve_all();
  if (!ACTIVE(OP_MKDIR)) return real_mkdirat(dirfd, path, mode);
  char a[PATH_MAX * 2];
  absolute(dirfd, path, a, sizeof a);
  PATH_BEFORE(OP_MKDIR, "mkdirat", a, NULL);
  int r = real_mkdirat(dirfd, path, mode);
  PATH_AFTER(OP_MKDIR, "mkdirat", a, NULL, r);
  return r;
}
char *mkdtemp(char *template) {
  if (real_mkdtemp == NULL) resolve_all();
  if (!ACTIVE(OP_MKDIR)) return real_mkdtemp(template);
  char a[PATH_MAX * 2];
  absolute(AT_FDCWD, template, a, sizeof a);
  in_shim++;
  struct plan p;
  before(OP_MKDIR, "mkdtemp", a, NULL, &p);
  if (p.fail) {
    in_shim--;
    errno = p.fail;
    return NULL;
  }
  char *r = real_mkdtemp(template);
  int err = errno;
  after(OP_MKDIR, "mkdtemp", a, NULL, &p, r == NULL ? -1 : 0, err);
  in_shim--;
  errno = err;
  return r;
}

int unlink(const char *path) {
  if (real_unlink == NULL) resolve_all();
  if (!ACTIVE(OP_UNLINK)) return real_unlink(path);
  char a[PATH_MAX * 2];
  absolute(AT_FDCWD, path, a, sizeof a);
  PATH_BEFORE(OP_UNLINK, "unlink", a, NULL);
  int r = real_unlink(path);
  PATH_AFTER(OP_UNLINK, "unlink", a, NULL, r);
  return r;
}
int unlinkat(int dirfd, const char *path, int flags) {
  if (real_unlinkat == NULL) resolve_all();
  if (!ACTIVE(OP_UNLINK)) return real_unlinkat(dirfd, path, flags);
  char a[PATH_MAX * 2];
  absolute(dirfd, path, a, sizeof a);
  PATH_BEFORE(OP_UNLINK, "unlinkat", a, NULL);
  int r = real_unlinkat(dirfd, path, flags);
  PATH_AFTER(OP_UNLINK, "unlinkat", a, NULL, r);
  return r;
}
int rmdir(const char *path) {
  if (real_rmdir == NULL) resolve_all();
  if (!ACTIVE(OP_UNLINK)) return real_rmdir(path);
  char a[PATH_MAX * 2];
  absolute(AT_FDCWD, path, a, sizeof a);
  PATH_BEFORE(OP_UNLINK, "rmdir", a, NULL);
  int r = real_rmdir(path);
  PATH_AFTER(OP_UNLINK, "rmdir", a, NULL, r);
  return r;
}
int remove(const char *path) {
  if (real_remove == NULL) resolve_all();
  if (!ACTIVE(OP_UNLINK)) return real_remove(path);
  char a[PATH_MAX * 2];
  absolute(AT_FDCWD, path, a, sizeof a);
  PATH_BEFORE(OP_UNLINK, "remove", a, NULL);
  int r = real_remove(path);
  PATH_AFTER(OP_UNLINK, "remove", a, NULL, r);
  return r;
}

int link(const char *from, const char *to) {
  if (real_link == NULL) resolve_all();
  if (!ACTIVE(OP_LINK)) return real_link(from, to);
  char a[PATH_MAX * 2], b[PATH_MAX * 2];
  absolute(AT_FDCWD, from, a, sizeof a);
  absolute(AT_FDCWD, to, b, sizeof b);
  PATH_BEFORE(OP_LINK, "link", a, b);
  int r = real_link(from, to);
  PATH_AFTER(OP_LINK, "link", a, b, r);
  return r;
}
int linkat(int fromfd, const char *from, int tofd, const char *to, int flags) {
  if (real_linkat == NULL) resolve_all();
  if (!ACTIVE(OP_LINK)) return real_linkat(fromfd, from, tofd, to, flags);
  char a[PATH_MAX * 2], b[PATH_MAX * 2];
  absolute(fromfd, from, a, sizeof a);
  absolute(tofd, to, b, sizeof b);
  PATH_BEFORE(OP_LINK, "linkat", a, b);
  int r = real_linkat(fromfd, from, tofd, to, flags);
  PATH_AFTER(OP_LINK, "linkat", a, b, r);
  return r;
}
int symlink(const char *target, const char *path) {
  if (real_symlink == NULL) resolve_all();
  if (!ACTIVE(OP_SYMLINK)) return real_symlink(target, path);
  char b[PATH_MAX * 2];
  absolute(AT_FDCWD, path, b, sizeof b);
  PATH_BEFORE(OP_SYMLINK, "symlink", b, target);
  int r = real_symlink(target, path);
  PATH_AFTER(OP_SYMLINK, "symlink", b, target, r);
  return r;
}
int symlinkat(const char *target, int dirfd, const char *path) {
  if (real_symlinkat == NULL) resolve_all();
  if (!ACTIVE(OP_SYMLINK)) return real_symlinkat(target, dirfd, path);
  char b[PATH_MAX * 2];
  absolute(dirfd, path, b, sizeof b);
  PATH_BEFORE(OP_SYMLINK, "symlinkat", b, target);
  int r = real_symlinkat(target, dirfd, path);
  PATH_AFTER(OP_SYMLINK, "symlinkat", b, target, r);
  return r;
}
