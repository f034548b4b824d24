// Bundles assets/src into assets/dist (committed, embedded by embed.go).
// Run with `npm run build`; the output is deterministic, so CI can rebuild
// and diff. Fails if the gzipped bundle exceeds the budget.
import * as esbuild from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const BUDGET = 150 * 1024; // bytes, gzipped JS + CSS
const out = 'assets/dist';

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await esbuild.build({
  // share: a share link's page (/s/{token}); the management pages run
  // in app (app.js PAGES).
  entryPoints: { app: 'assets/src/app.js', share: 'assets/src/share.js' },
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
  legalComments: 'eof',
  outdir: out,
  logLevel: 'warning',
});
await esbuild.build({
  entryPoints: { app: 'assets/src/app.css' },
  bundle: true,
  minify: true,
  target: ['chrome110', 'firefox115', 'safari16'],
  outdir: out,
  logLevel: 'warning',
});
// The math renderer is loaded on demand (markdown.js): its own bundle,
// outside the budget of what every page loads.
await esbuild.build({
  entryPoints: { math: 'assets/src/math.js' },
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
  legalComments: 'eof',
  outdir: out,
  logLevel: 'warning',
});
// The Mermaid renderer is loaded on demand too (diagram.js), and runs only
// inside a sandboxed artifact frame. ELK, Mermaid 12's default layout
// engine, is left out (1.5 MB, a third of the bundle): the renderer lays
// out with dagre (Mermaid's classic layout), and a diagram that asks for
// `layout: elk` fails to render and shows as its code.
const noElk = {
  name: 'no-elk',
  setup(b) {
    b.onResolve({ filter: /^elkjs(\/|$)/ }, (args) => ({ path: args.path, namespace: 'no-elk' }));
    b.onLoad({ filter: /.*/, namespace: 'no-elk' }, () => ({
      contents: 'export default class ELK { constructor() { throw new Error("the ELK layout is not bundled: use the default layout"); } }',
      loader: 'js',
    }));
  },
};
await esbuild.build({
  entryPoints: { mermaid: 'assets/src/mermaid.js' },
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
  legalComments: 'eof',
  plugins: [noElk],
  outdir: out,
  logLevel: 'warning',
});
const woff2Only = {
  name: 'woff2-only',
  setup(b) {
    b.onLoad({ filter: /katex\.css$/ }, (args) => ({
      contents: readFileSync(args.path, 'utf8').replace(/,\s*url\([^)]*\.(?:woff|ttf)\) format\("(?:woff|truetype)"\)/g, ''),
      loader: 'css',
    }));
  },
};
await esbuild.build({
  entryPoints: { math: 'assets/src/math.css' },
  bundle: true,
  minify: true,
  target: ['chrome110', 'firefox115', 'safari16'],
  loader: { '.woff2': 'file' },
  assetNames: '[name]-[hash]',
  plugins: [woff2Only],
  outdir: out,
  logLevel: 'warning',
});
copyFileSync('assets/src/icon.svg', `${out}/icon.svg`);

let total = 0;
for (const f of ['app.js', 'app.css']) {
  const b = readFileSync(`${out}/${f}`);
  const gz = gzipSync(b, { level: 9 }).length;
  total += gz;
  console.log(`${f}: ${(b.length / 1024).toFixed(1)} KB, ${(gz / 1024).toFixed(1)} KB gzipped`);
}
console.log(`total: ${(total / 1024).toFixed(1)} KB gzipped (budget ${BUDGET / 1024} KB)`);
if (total > BUDGET) {
  console.error('bundle over budget');
  process.exit(1);
}
