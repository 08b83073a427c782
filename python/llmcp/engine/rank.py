"""One rank of the torch engine (docs/engine-protocol.md).

The llmcp trainer starts the ranks of its own node with the standard env://
variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and
LLMCP_ENGINE_CHANNEL=3; ranks on other nodes join with

    python -m llmcp.engine --rank R --world-size W --master-addr HOST --master-port PORT [--device cuda]

Rank 0 reads the trainer's commands from standard input and answers on
file descriptor 3; it forwards each command to the other ranks with
torch.distributed broadcasts, and every rank takes its rows of each batch.
Gradients are summed by DistributedDataParallel (gloo on CPU, NCCL on CUDA).
A rank never touches the run directory: state goes back to the trainer,
which publishes the checkpoint.

Lifecycle: a rank started by the trainer exits as soon as the trainer is
gone (its standard input ends, and on Linux the parent-death signal), ignores
SIGINT (the trainer decides what a Ctrl-C means), and reports every second on
its channel so the trainer can name a rank that stopped. Any failure is
reported as a `fatal` frame with the last lines of the traceback, then the
rank exits.
"""
import argparse
import os
import queue
import signal
import sys
import threading
import time
import traceback

from . import wire

#: Exit status of a rank whose trainer is gone.
EXIT_ORPHANED = 70
#: Exit status after a reported failure.
EXIT_FAILED = 1

#: Largest command payload rank 0 accepts (a state hand-over of 2^27 f64 values × 3).
MAX_PAYLOAD = 3 * 8 * (1 << 27)


def _parse(argv):
    env = os.environ
    parser = argparse.ArgumentParser(prog="python -m llmcp.engine", description="One rank of llmcp's torch engine.")
    parser.add_argument("--rank", type=int, default=int(env.get("RANK", "0")))
    parser.add_argument("--world-size", type=int, default=int(env.get("WORLD_SIZE", "1")))
    parser.add_argument("--local-rank", type=int, default=int(env.get("LOCAL_RANK", "-1")))
    parser.add_argument("--master-addr", default=env.get("MASTER_ADDR", "127.0.0.1"))
    parser.add_argument("--master-port", type=int, default=int(env.get("MASTER_PORT", "29500")))
    parser.add_argument("--device", choices=("cpu", "cuda"), default=env.get("LLMCP_ENGINE_DEVICE", "cpu"))
    parser.add_argument("--threads", type=int, default=int(env.get("LLMCP_ENGINE_THREADS", "1")), help="intra-op threads of this rank")
    parser.add_argument("--timeout", type=float, default=float(env.get("LLMCP_ENGINE_TIMEOUT", "1800")), help="seconds a collective may wait")
    args = parser.parse_args(argv)
    if args.local_rank < 0:
        args.local_rank = args.rank
    if not 0 <= args.rank < args.world_size:
        parser.error("--rank must be in [0, world size %d), got %d" % (args.world_size, args.rank))
    return args


class Channel:
    """The trainer's side of a local rank: commands in (rank 0), replies and heartbeats out."""

    def __init__(self, rank, fd):
        self.rank = rank
        self.writer = wire.FrameWriter(os.fdopen(fd, "wb", buffering=0))
        self.commands = queue.Queue()
        self.operations = 0

    def start(self, heartbeat_seconds):
        threading.Thread(target=self._read, name="llmcp-commands", daemon=True).start()
        threading.Thread(target=self._beat, args=(heartbeat_seconds,), name="llmcp-heartbeat", daemon=True).start()

    def _read(self):
        stdin = sys.stdin.buffer
        try:
            if self.rank == 0:
                while True:
                    self.commands.put(wire.read_frame(stdin, MAX_PAYLOAD))
            else:
                while stdin.read(1 << 16):
                    pass
        except wire.WireError:
            pass
        except Exception:  # noqa: BLE001 - any read failure means the trainer is gone
            pass
        # The trainer is gone (its end of the pipe closed): nothing may outlive it.
        os._exit(EXIT_ORPHANED)

    def _beat(self, seconds):
        while True:
            try:
                self.writer.write({"kind": "heartbeat", "rank": self.rank, "operations": self.operations})
            except OSError:
                os._exit(EXIT_ORPHANED)
            time.sleep(seconds)

    def reply(self, header, payload=b""):
        self.writer.write(header, payload)

    def next_command(self):
        return self.commands.get()


def _die_with_parent():
    """Linux: SIGKILL this process when the trainer that started it dies (PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _fatal(channel, code, message, detail=""):
    header = {"kind": "fatal", "code": code, "message": message, "detail": detail[-4000:]}
    if channel is not None:
        try:
            channel.reply(header)
        except OSError:
            pass
    sys.stderr.write("llmcp engine: %s: %s\n%s" % (code, message, detail))
    sys.stderr.flush()


def main(argv=None):
    args = _parse(argv)
    channel_fd = os.environ.get("LLMCP_ENGINE_CHANNEL")
    channel = None
    if channel_fd is not None:
        _die_with_parent()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if os.getppid() == 1:
            os._exit(EXIT_ORPHANED)
        channel = Channel(args.rank, int(channel_fd))
        channel.start(float(os.environ.get("LLMCP_ENGINE_HEARTBEAT", "1")))
    elif args.rank == 0:
        sys.stderr.write("llmcp engine: rank 0 is started by the llmcp trainer (llmcp train --engine torch); other nodes join with --rank R\n")
        return 2
    # The BLAS and OpenMP pools read these when torch loads: every rank, however it was started, runs its
    # products with the same thread count (the bits of a product may depend on it).
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(max(1, args.threads))
    try:
        import torch  # noqa: F401
    except ImportError as e:
        _fatal(channel, "ENGINE_TORCH_MISSING", "PyTorch is not installed for %s (%s)" % (sys.executable, e))
        os._exit(EXIT_FAILED)
    from .server import Server, EngineFailure

    try:
        server = Server(args, channel)
        server.run()
    except EngineFailure as e:
        _fatal(channel, e.code, str(e), e.detail)
        os._exit(EXIT_FAILED)
    except Exception as e:  # noqa: BLE001 - report anything, then leave
        _fatal(channel, "ENGINE_FAILED", "rank %d failed: %s: %s" % (args.rank, type(e).__name__, e), traceback.format_exc())
        os._exit(EXIT_FAILED)
    sys.stdout.flush()
    sys.stderr.flush()
    # Not a normal interpreter exit: the command reader thread holds standard input's lock.
    os._exit(0)

