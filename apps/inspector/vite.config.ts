import { defineConfig, type Plugin } from 'vite';

/**
 * In the built page, a Content-Security-Policy forbids every network
 * connection (`connect-src 'none'`): the files a user opens cannot leave the
 * browser. (Not applied to `vite dev`, whose live reload needs a socket.)
 */
function contentSecurityPolicy(): Plugin {
  const policy = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'none'; object-src 'none'; base-uri 'none'";
  return {
    name: 'llmcp-inspector-csp',
    apply: 'build',
    transformIndexHtml: (html) => html.replace('<meta charset="utf-8" />', `<meta charset="utf-8" />\n    <meta http-equiv="Content-Security-Policy" content="${policy}" />`),
  };
}

/**
 * The inspector is a static page: relative asset URLs (`base: './'`) so
 * `dist/` works from any path, offline, with no server logic. `@llmcp/format`
 * is bundled from its TypeScript sources (the `@llmcp/source` export
 * condition), so the page never depends on a stale build of the package.
 */
export default defineConfig({
  base: './',
  plugins: [contentSecurityPolicy()],
  resolve: { conditions: ['@llmcp/source', 'module', 'browser', 'development|production'] },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', sourcemap: true },
});
