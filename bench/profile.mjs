// CPU profile of one adapter on one workload, measured part only.
//   node profile.mjs w1 '{"T":1000}' [--reps 10] [--warm 3] [--adapter cubepi] [--interval 100]
//   PROFILE_NODE_FLAGS="--no-opt --no-sparkplug" node profile.mjs ...   (node flags for the child: e.g. the interpreter
//   alone, which is where a cold process such as a W1 T=200 run spends most of its turns)
// Runs itself as a child under `node --cpu-prof` (profiles/<adapter>-<w>.cpuprofile): the child warms up, then runs the
// workload --reps times and writes the monotonic time window of those reps next to the profile. The summary
// (profile-summary.mjs) then counts only the samples inside that window, so module loading and warm-up are left out;
// it is printed and saved as profiles/<adapter>-<w>.txt.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (k, d) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : d; };
const positional = args.filter((a, i) => !a.startsWith("--") && !(i > 0 && args[i - 1].startsWith("--") && args[i - 1] !== "--child"));
const [w = "w1", paramsJson = "{}"] = positional;
const adapter = opt("--adapter", "cubepi");
const reps = Number(opt("--reps", "10"));
const warm = Number(opt("--warm", "3")); // --warm 0: profile a cold process, the way run.mjs measures
const name = `${adapter}-${w}`;
const dir = path.join(here, "profiles");

if (args.includes("--child")) {
  const { resetMarkers, resetSource, killLeakedTickers } = await import("./common.mjs");
  const mod = await import(pathToFileURL(path.join(here, "adapters", `${adapter}.mjs`)).href);
  const params = JSON.parse(paramsJson);
  const once = async () => { resetMarkers(); resetSource(); await mod[w](params); killLeakedTickers(); };
  for (let i = 0; i < warm; i++) await once(); // warm-up: JIT, lazy initialisation
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < reps; i++) await once();
  const t1 = process.hrtime.bigint();
  fs.writeFileSync(path.join(dir, `${name}.window.json`), JSON.stringify({ startUs: Number(t0 / 1000n), endUs: Number(t1 / 1000n), reps, params, w, adapter }));
  process.exit(0);
}

fs.mkdirSync(dir, { recursive: true });
const child = spawnSync(process.execPath, [...(process.env.PROFILE_NODE_FLAGS ?? "").split(" ").filter(Boolean), "--cpu-prof", "--cpu-prof-interval", opt("--interval", "100"), "--cpu-prof-dir", dir, "--cpu-prof-name", `${name}.cpuprofile`, fileURLToPath(import.meta.url), "--child", w, paramsJson, "--adapter", adapter, "--reps", String(reps), "--warm", String(warm)], { stdio: "inherit", cwd: here });
if (child.status !== 0) process.exit(child.status ?? 1);
const summary = spawnSync(process.execPath, [path.join(here, "profile-summary.mjs"), path.join(dir, `${name}.cpuprofile`), "--window", path.join(dir, `${name}.window.json`), "--top", opt("--top", "30")], { encoding: "utf8", cwd: here });
process.stdout.write(summary.stdout + summary.stderr);
fs.writeFileSync(path.join(dir, `${name}.txt`), summary.stdout);
