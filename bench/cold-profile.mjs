// W1 as run.mjs measures it, profiled: N fresh processes, each warmed with one run of T = 20 and then running T = 200
// under `node --cpu-prof` (25 us sampling); self time is summed over the measured turns only (first to last tool
// call) and printed per turn, by file and by function. Garbage collection shows as "(garbage collector)".
//   node cold-profile.mjs [adapter=cubepi] [processes=8]
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
const [adapter = "cubepi", N = "8"] = process.argv.slice(2);
if (process.argv[2] === "--child") {
  const common = await import("./common.mjs");
  const mod = await import(`./adapters/${process.argv[3]}.mjs`);
  common.resetMarkers(); await mod.w1({ T: 20 });
  common.resetMarkers();
  await mod.w1({ T: 200 });
  const m = common.markers.t;
  fs.writeFileSync(process.argv[4], JSON.stringify({ s: Number(m[0] / 1000n), e: Number(m.at(-1) / 1000n) }));
  process.exit(0);
}
const self = new Map(); let total = 0; let wall = 0;
for (let i = 0; i < Number(N); i++) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cubepi-cold-"));
  spawnSync(process.execPath, ["--cpu-prof", "--cpu-prof-interval", "25", "--cpu-prof-dir", dir, fileURLToPath(import.meta.url), "--child", adapter, `${dir}/w.json`], { stdio: "inherit", cwd: path.dirname(fileURLToPath(import.meta.url)) });
  const w = JSON.parse(fs.readFileSync(`${dir}/w.json`)); wall += w.e - w.s;
  const prof = JSON.parse(fs.readFileSync(`${dir}/${fs.readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))}`));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  let t = prof.startTime;
  for (let k = 0; k < prof.samples.length; k++) {
    t += prof.timeDeltas[k];
    if (t < w.s || t > w.e) continue;
    const f = byId.get(prof.samples[k]).callFrame;
    const key = `${f.functionName || "(anon)"} ${f.url.replace(/.*\/(node_modules|main)\//, "").replace(/^dist\/src\//, "")}:${f.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + prof.timeDeltas[k]); total += prof.timeDeltas[k];
  }
  fs.rmSync(dir, { recursive: true });
}
console.log(`${adapter}: ${N} processes, measured wall ${(wall / N / 199).toFixed(1)} us/turn; sampled ${(total / N / 199).toFixed(1)} us/turn`);
const byFile = new Map();
for (const [k, v] of self) {
  const url = k.slice(k.lastIndexOf(" ") + 1).replace(/:\d+$/, "").replace(/^(rxjs|zod)\/.*/, "$1");
  const f = url === "" ? k.slice(0, k.lastIndexOf(" ")) : url; // V8's own entries: (garbage collector), (program)
  byFile.set(f, (byFile.get(f) ?? 0) + v);
}
for (const [k, v] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 14)) console.log(`${(v / N / 199).toFixed(2).padStart(7)} us/turn  ${k}`);
console.log("--");
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`${(v / N / 199).toFixed(2).padStart(7)} us/turn  ${k}`);
