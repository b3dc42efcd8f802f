import { readFileSync, readdirSync } from 'node:fs';
const load = (dir) => { const f = readdirSync(dir)[0]; return JSON.parse(readFileSync(`${dir}/${f}`, 'utf8')); };
function selfTimes(p) {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map();
  let clock = 0; const cut = (p.endTime - p.startTime) * 0.4; let counted = 0;
  p.samples.forEach((id, i) => { clock += p.timeDeltas[i] ?? 0; if (clock < cut) return; self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)); });
  const byFn = new Map(); const byFile = new Map(); let total = 0;
  for (const [id, t] of self) {
    const n = byId.get(id); const cf = n.callFrame;
    if (cf.functionName === '(idle)') continue;
    total += t;
    const file = cf.url.replace(/^.*\/work\/main\//, '').replace(/^file:\/\//, '') || '(native)';
    const key = `${cf.functionName || '(anon)'} ${file}:${cf.lineNumber + 1}`;
    byFn.set(key, (byFn.get(key) ?? 0) + t);
    const fk = file.replace(/node_modules\/([^/]+(\/[^/]+)?).*/, 'nm:$1');
    byFile.set(fk, (byFile.get(fk) ?? 0) + t);
  }
  return { byFn, byFile, total };
}
const a = selfTimes(load('/tmp/s89/prof/session'));
const b = selfTimes(load('/tmp/s89/prof/stateless'));
const n = 6000 * 0.6;
console.log('busy us/req session', (a.total / n).toFixed(0), 'stateless', (b.total / n).toFixed(0));
const diff = (ma, mb) => [...new Set([...ma.keys(), ...mb.keys()])].map((k) => [k, ((ma.get(k) ?? 0) - (mb.get(k) ?? 0)) / n, (ma.get(k) ?? 0) / n]).sort((x, y) => y[1] - x[1]);
console.log('--- by file (session - stateless, us/req; session us/req)');
for (const [k, d, s] of diff(a.byFile, b.byFile).slice(0, 25)) console.log(d.toFixed(1).padStart(7), s.toFixed(1).padStart(7), k);
console.log('--- by function');
for (const [k, d, s] of diff(a.byFn, b.byFn).slice(0, 40)) console.log(d.toFixed(1).padStart(7), s.toFixed(1).padStart(7), k);
