// W1 turn-time distribution by tenth of the run, warm: the per-turn view the harness's first/last-10% medians hide.
//   node turn-deciles.mjs [adapter=cubepi] [T=1000] [--warm 3] [--reps 2]      (e.g. node --trace-deopt turn-deciles.mjs)
// After --warm full runs of T turns (JIT warm), each measured run prints µs/turn and, per tenth of its turns, the
// median / mean tool-to-tool interval: a step in the medians that does not follow the history length is a JIT state
// (deopt / re-optimisation), not growth with history.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { markers, resetMarkers, nsToUs, median } from "./common.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = (k, d) => { const i = args.indexOf(k); return i >= 0 ? Number(args[i + 1]) : d; };
const [adapter = "cubepi", Targ = "1000"] = args.filter((a, i) => !a.startsWith("--") && !(i > 0 && args[i - 1].startsWith("--")));
const T = Number(Targ);
const mod = await import(pathToFileURL(path.join(here, "adapters", `${adapter}.mjs`)).href);
for (let i = 0; i < opt("--warm", 3); i++) { resetMarkers(); await mod.w1({ T }); }
for (let rep = 0; rep < opt("--reps", 2); rep++) {
  console.log(`=== measured run ${rep}`);
  resetMarkers();
  const r = await mod.w1({ T });
  const d = [];
  for (let i = 1; i < markers.t.length; i++) d.push(nsToUs(markers.t[i] - markers.t[i - 1]));
  const k = Math.floor(d.length / 10);
  const tenths = [];
  for (let i = 0; i < 10; i++) { const s = d.slice(i * k, (i + 1) * k); tenths.push(`${median(s).toFixed(0)}/${(s.reduce((a, b) => a + b, 0) / s.length).toFixed(0)}`); }
  console.log(`${adapter} T=${T}: ${(nsToUs(r.wallNs) / (T + 1)).toFixed(1)} µs/turn; per tenth, median/mean µs: ${tenths.join(" ")}`);
}
