export * from "node:fs";
import fs from "node:fs";
import path from "node:path";
export default fs;
// globSync: the subset conformance uses (patterns with * and **), for Node 20.
export function globSync(pattern, opts = {}) {
  const cwd = opts.cwd ?? process.cwd();
  const re = new RegExp("^" + pattern.split("**/").map((p) => p.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")).join("(?:.*/)?") + "$");
  const out = [];
  const walk = (d) => { for (const e of fs.readdirSync(path.join(cwd, d), { withFileTypes: true })) { const r = d ? d + "/" + e.name : e.name; if (e.isDirectory()) walk(r); else if (re.test(r)) out.push(r); } };
  try { walk(""); } catch {}
  return out;
}
