import { readFileSync, readdirSync } from 'node:fs';
const dir = process.argv[2]; const target = process.argv[3];
const p = JSON.parse(readFileSync(`${dir}/${readdirSync(dir)[0]}`, 'utf8'));
const parent = new Map(); for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map(); p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
const stacks = new Map();
for (const n of p.nodes) if (n.callFrame.functionName === target) {
  const chain = []; let id = parent.get(n.id);
  for (let d = 0; d < 6 && id !== undefined; d++) { const cf = byId.get(id).callFrame; chain.push(`${cf.functionName}@${cf.url.split('/').slice(-2).join('/')}:${cf.lineNumber+1}`); id = parent.get(id); }
  const k = chain.join(' < '); stacks.set(k, (stacks.get(k) ?? 0) + (self.get(n.id) ?? 0));
}
for (const [k, t] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log((t / 1000).toFixed(0).padStart(6), 'ms', k);
