// Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time per function and per package/file, top N.
//   node profile-summary.mjs profiles/cubepi-w1.cpuprofile [--top 25] [--window profiles/cubepi-w1.window.json]
// --window: only samples inside the monotonic time window profile.mjs recorded (the measured repetitions).
// Self time = samples whose top frame is that function. "(garbage collector)", "(program)" and "(idle)" are V8's own
// buckets. Files under cubepi's dist/ are shown as cubepi/<path>; anything in node_modules as <package>.
import fs from "node:fs";

const args = process.argv.slice(2);
const file = args[0];
const top = args.includes("--top") ? Number(args[args.indexOf("--top") + 1]) : 25;
const windowFile = args.includes("--window") ? args[args.indexOf("--window") + 1] : undefined;
const prof = JSON.parse(fs.readFileSync(file, "utf8"));
const win = windowFile ? JSON.parse(fs.readFileSync(windowFile, "utf8")) : { startUs: -Infinity, endUs: Infinity };

const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const selfUs = new Map();
// timeDeltas[i] is the time before sample i; attribute it to sample i's node (V8's convention).
// Timestamps are V8's monotonic clock in µs, the clock process.hrtime() reads too.
let ts = prof.startTime;
for (let i = 0; i < prof.samples.length; i++) {
  ts += prof.timeDeltas[i] ?? 0;
  if (ts < win.startUs || ts > win.endUs) continue;
  selfUs.set(prof.samples[i], (selfUs.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
}

const where = (url) => {
  if (!url) return "(v8/native)";
  const u = url.replace(/^file:\/\//, "");
  let m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u);
  if (m) return m[1];
  m = /\/dist\/(.*)$/.exec(u);
  if (m) return "cubepi/" + m[1];
  if (u.startsWith("node:")) return u;
  m = /\/bench\/(.*)$/.exec(u);
  if (m) return "bench/" + m[1];
  return u;
};
const fnKey = (n) => {
  const cf = n.callFrame;
  return `${cf.functionName || "(anonymous)"} ${where(cf.url)}${cf.url ? ":" + (cf.lineNumber + 1) : ""}`;
};
const fileKey = (n) => where(n.callFrame.url) === "(v8/native)" && /^\(/.test(n.callFrame.functionName) ? n.callFrame.functionName : where(n.callFrame.url);

const agg = (keyOf) => {
  const m = new Map();
  for (const [id, us] of selfUs) { const k = keyOf(byId.get(id)); m.set(k, (m.get(k) ?? 0) + us); }
  return [...m.entries()].sort((a, b) => b[1] - a[1]);
};
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const idle = agg(fnKey).filter(([k]) => k.startsWith("(idle)")).reduce((a, [, v]) => a + v, 0);
const busy = total - idle;
const pct = (us) => ((100 * us) / busy).toFixed(1).padStart(5) + "%";
if (windowFile) console.log(`window: ${win.adapter} ${win.w} ${JSON.stringify(win.params)} x ${win.reps} reps, ${((win.endUs - win.startUs) / 1000).toFixed(1)} ms wall (profile ${((prof.endTime - prof.startTime) / 1000).toFixed(1)} ms)`);
console.log(`${file}: ${(total / 1000).toFixed(1)} ms sampled, ${(busy / 1000).toFixed(1)} ms not idle (percentages are of the non-idle time)`);
console.log(`\nTop ${top} functions by self time:`);
for (const [k, us] of agg(fnKey).filter(([k]) => !k.startsWith("(idle)")).slice(0, top)) console.log(`${pct(us)}  ${(us / 1000).toFixed(1).padStart(8)} ms  ${k}`);
console.log(`\nBy file / package:`);
for (const [k, us] of agg(fileKey).filter(([k]) => k !== "(idle)").slice(0, 20)) console.log(`${pct(us)}  ${(us / 1000).toFixed(1).padStart(8)} ms  ${k}`);
