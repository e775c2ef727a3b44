// The CPU time (user + system, process.cpuUsage) of the measured part of W1 or W2, next to its wall time: one
// measurement per process, like worker.mjs (warm-up included). On a host shared with other load, wall time mostly
// measures the scheduler; CPU time is steadier, though not immune (caches, frequency). Used for the A/B in RESULTS.md
// ("W1 and W2 after issue 21's gaps"):
//   node cpu-worker.mjs <adapter-module> w1 '{"T":200}'
//   node cpu-worker.mjs <adapter-module> w2 '{"N":100000,"pacing":"burst16"}'
// Prints "RESULT {json}": cpuUsPerTurn and wallUsPerTurn (W1), cpuDeltasPerSec and wallDeltasPerSec (W2).
import path from "node:path";
import { pathToFileURL } from "node:url";
import { resetMarkers } from "./common.mjs";

const [adapterArg, workload, paramsJson = "{}"] = process.argv.slice(2);
const params = JSON.parse(paramsJson);
const mod = await import(pathToFileURL(path.resolve(adapterArg)).href);

if (workload === "w1") {
  resetMarkers();
  await mod.w1({ ...params, T: 20 });
  resetMarkers();
  const before = process.cpuUsage();
  const r = await mod.w1(params);
  const cpu = process.cpuUsage(before);
  const turns = params.T + 1;
  console.log("RESULT " + JSON.stringify({ cpuUsPerTurn: (cpu.user + cpu.system) / turns, wallUsPerTurn: Number(r.wallNs) / 1e3 / turns }));
} else if (workload === "w2") {
  await mod.w2({ ...params, N: 1000 });
  const before = process.cpuUsage();
  const r = await mod.w2(params);
  const cpu = process.cpuUsage(before);
  console.log(
    "RESULT " + JSON.stringify({ cpuDeltasPerSec: r.deltas / ((cpu.user + cpu.system) / 1e6), wallDeltasPerSec: r.deltas / (Number(r.wallNs) / 1e9) }),
  );
} else {
  throw new Error(`cpu-worker: W1 or W2 only, not ${workload}`);
}
process.exit(0);
