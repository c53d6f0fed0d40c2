#!/usr/bin/env node
// Summarises a V8 .cpuprofile (from `node --cpu-prof`): the functions with the most self time
// and the packages/folders with the most inclusive time.
//   node bench/profile-summary.mjs PROFILE.cpuprofile [TOP]
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/profile-summary.mjs PROFILE.cpuprofile [TOP]');
  process.exit(2);
}
const top = Number(topArg ?? 15);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const sampled = new Map();
profile.samples.forEach((id, i) => sampled.set(id, (sampled.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

/** `ajv/dist/compile`, `lib/src/validate`, `node:internal/modules`: where a frame's code lives. */
function area(url) {
  if (!url) return '(native/V8)';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = u.slice(nm + '/node_modules/'.length).split('/');
    const pkg = rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
    return pkg;
  }
  const lib = u.indexOf('/lib/src/');
  if (lib >= 0) return u.slice(lib + 1).split('/').slice(0, 3).join('/');
  if (u.startsWith('node:')) return u.split('/').slice(0, 2).join('/');
  return u;
}

const self = new Map();
const inclusive = new Map();
for (const [id, us] of sampled) {
  const n = nodes.get(id);
  const f = n.callFrame;
  const name = `${f.functionName || '(anonymous)'} ${area(f.url)}${f.url ? `:${f.lineNumber + 1}` : ''}`;
  self.set(name, (self.get(name) ?? 0) + us);
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const a = area(nodes.get(cur).callFrame.url);
    if (!seen.has(a)) {
      inclusive.set(a, (inclusive.get(a) ?? 0) + us);
      seen.add(a);
    }
  }
}
const total = (profile.endTime - profile.startTime) / 1000;
const ms = (us) => `${(us / 1000).toFixed(0).padStart(6)} ms`;
console.log(`profile ${file}: ${total.toFixed(0)} ms`);
console.log('\nself time (top functions)');
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms(v)}  ${k}`);
console.log('\ninclusive time (by package / folder)');
for (const [k, v] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms(v)}  ${k}`);
