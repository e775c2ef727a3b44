// Replaying a 50-case eval (issue 33), cubepi/evals only: cases/s and CPU per case, against a baseline measured in
// the same process and run: the same 50 cases' agent runs, each on a FauxProvider inside TestScheduler.run(), without
// the eval (no scorers, no report). The ratio is what the eval harness (replay provider, seven scorers as observe-only
// middleware, JSONL report) costs on top of the runs themselves. Each case is a two-tool agent: two tool calls and an
// answer (three model calls). The two configurations alternate for `--rounds` rounds, warm; the best round of each is
// printed (the machine is shared by several helpers: numbers are taken under load, the best is the least disturbed).
// Imports the built package (../dist) and the root's devDependencies: no `npm ci` in bench/ needed.
//   npm run build && node bench/eval-replay.mjs [--rounds 10] [--cases 50]
import { createRequire } from "node:module";
import { cpus, loadavg } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const opt = (k, d) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : d; };
const rounds = Number(opt("--rounds", "10"));
const N = Number(opt("--cases", "50"));

const dist = new URL("../dist/src/", import.meta.url);
const cubepiRequire = createRequire(fileURLToPath(new URL("index.js", dist)));
const { Agent, defineTool } = await import(new URL("index.js", dist).href);
const { FauxProvider, fauxMessage, fauxToolCall } = await import(new URL("testing/index.js", dist).href);
const evals = await import(new URL("evals/index.js", dist).href);
const { z } = await import(pathToFileURL(cubepiRequire.resolve("zod")).href);
const { TestScheduler } = await import(pathToFileURL(cubepiRequire.resolve("rxjs/testing")).href);

const weather = defineTool({ name: "weather", description: "°C of a city", parameters: z.object({ city: z.string() }), execute: (_id, { city }) => String(city.length) });
const convert = defineTool({ name: "convert", description: "°C to °F", parameters: z.object({ celsius: z.number() }), execute: (_id, { celsius }) => String(celsius * 1.8 + 32) });
const tools = [weather, convert];

const answers = (i) => [
  fauxMessage([fauxToolCall("weather", { city: `City${i}` }, { id: `w${i}` })]),
  fauxMessage([fauxToolCall("convert", { celsius: 6 }, { id: `c${i}` })]),
  fauxMessage(`It is ${6 * 1.8 + 32}°F in City${i}.`),
];
const cases = Array.from({ length: N }, (_, i) => ({
  id: `case-${i}`,
  input: `How warm is City${i}, in °F?`,
  expected: { output: `It is ${6 * 1.8 + 32}°F in City${i}.`, toolCalls: [{ name: "weather", arguments: { city: `City${i}` } }, { name: "convert" }] },
}));

// Record once, live (on a FauxProvider standing in for the model).
const recorder = evals.recordProvider(new FauxProvider({ responses: cases.flatMap((_, i) => answers(i)) }));
const createAgent = ({ provider, middleware }) => new Agent({ provider, model: "faux", tools, middleware: [...middleware] });
await evals.evaluate({ mode: "live", recorder, createAgent, dataset: cases, scorers: [] });
const recordings = evals.parseRecordings(recorder.toJSONL());
const byCase = new Map();
for (const r of recordings) byCase.set(r.caseId, [...(byCase.get(r.caseId) ?? []), r]);
const scorers = () => [evals.exact(), evals.trajectory(), evals.toolChoice(), evals.turns({ max: 4 }), evals.tokens(), evals.cost(), evals.latency()];

async function baseline() {
  for (const c of cases) {
    const provider = evals.replayProvider(byCase.get(c.id));
    const agent = new Agent({ provider, model: "faux", tools });
    await new Promise((resolve, reject) => {
      new TestScheduler((a, b) => a === b).run(() => {
        agent.prompt$(c.input).subscribe({ error: reject, complete: resolve });
      });
    });
  }
}
let lastJsonl;
async function evalReplay() {
  const report = await evals.evaluate({ mode: "replay", recordings, createAgent, dataset: cases, scorers: scorers() });
  if (report.summary.passRate !== 1) throw new Error(`the replay did not pass: ${evals.formatReport(report)}`);
  const jsonl = evals.reportToJSONL(report);
  if (lastJsonl !== undefined && jsonl !== lastJsonl) throw new Error("two replays differ");
  lastJsonl = jsonl;
}

async function measure(fn) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { wall, cpu: (cpu.user + cpu.system) / 1000 };
}

await baseline();
await evalReplay(); // warm-up
const best = { baseline: { wall: Infinity, cpu: Infinity }, eval: { wall: Infinity, cpu: Infinity } };
for (let r = 0; r < rounds; r++) {
  for (const [name, fn] of [["baseline", baseline], ["eval", evalReplay]]) {
    const m = await measure(fn);
    best[name].wall = Math.min(best[name].wall, m.wall);
    best[name].cpu = Math.min(best[name].cpu, m.cpu);
  }
}
const row = (name) => {
  const { wall, cpu } = best[name];
  return `| ${name === "eval" ? "evaluate() replay, 7 scorers" : "baseline: the runs alone"} | ${(N / (wall / 1000)).toFixed(0)} | ${(cpu / N).toFixed(3)} | ${(wall / N).toFixed(3)} |`;
};
console.log(`Node ${process.version}, ${cpus().length} cores, load average ${loadavg().map((l) => l.toFixed(1)).join(" ")} (shared machine), ${N} cases × 3 model calls, best of ${rounds} rounds`);
console.log("| configuration | cases/s | CPU ms/case | wall ms/case |\n| --- | ---: | ---: | ---: |");
console.log(row("baseline"));
console.log(row("eval"));
console.log(`ratio (eval / baseline): wall ${(best.eval.wall / best.baseline.wall).toFixed(2)}×, CPU ${(best.eval.cpu / best.baseline.cpu).toFixed(2)}×; report JSONL identical across ${rounds + 1} replays`);
