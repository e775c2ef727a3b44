// What one parallel input guardrail that passes costs (issue 32): cubepi alone, without and with
// `inputGuardrail({ mode: 'parallel' })`. Public API only; imports the built package (../dist).
//   node guardrail-cost.mjs [--reps 7]
// Repetitions interleave the two configurations in one process; printed as medians (min–max) and the ratio:
//   run: 2,000 one-turn runs (a prompt, one text answer in one synchronous burst): µs and CPU µs per run (the
//        guardrail runs once per run, on turn 0, so this is its per-turn cost on a W1-style turn)
//   ttfd: time to the first text delta with a 50 ms model (FauxProvider, delayMs 50), the guardrail's check taking
//        10 ms (a Promise): median of 20 runs, ms
import { Agent, inputGuardrail } from "cubepi";
import { FauxProvider, fauxMessage } from "cubepi/testing";
import { median } from "./common.mjs";

const args = process.argv.slice(2);
const opt = (k, d) => { const i = args.indexOf(k); return i >= 0 ? args[i + 1] : d; };
const REPS = Number(opt("--reps", "7"));
const model = { id: "faux", provider: "faux" };

const guard = (delayMs) =>
  inputGuardrail({
    name: "pass",
    text: () => (delayMs === 0 ? "pass" : new Promise((resolve) => setTimeout(() => resolve("pass"), delayMs))),
  });

async function perRun(withGuardrail, N) {
  const middleware = withGuardrail ? [guard(0)] : [];
  const provider = new FauxProvider({ responses: [] });
  const agent = new Agent({ provider, model, middleware });
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    provider.setResponses([fauxMessage("ok")]);
    agent.reset();
    await agent.prompt("go");
  }
  const ns = Number(process.hrtime.bigint() - t0);
  const cpu = process.cpuUsage(cpu0);
  return { us: ns / 1e3 / N, cpuUs: (cpu.user + cpu.system) / N };
}

async function ttfd(withGuardrail, N) {
  const times = [];
  for (let i = 0; i < N; i++) {
    const provider = new FauxProvider({ responses: [fauxMessage("hello there")], delayMs: 50 });
    const agent = new Agent({ provider, model, middleware: withGuardrail ? [guard(10)] : [] });
    const t0 = process.hrtime.bigint();
    let first;
    const sub = agent.events$.subscribe((ev) => {
      if (first === undefined && ev.type === "message_update" && ev.streamEvent.type === "text_delta") first = process.hrtime.bigint();
    });
    await agent.prompt("go");
    sub.unsubscribe();
    times.push(Number(first - t0) / 1e6);
  }
  return median(times);
}

const fmt = (xs, d = 2) => `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`;
const res = { none: { us: [], cpu: [], ttfd: [] }, guard: { us: [], cpu: [], ttfd: [] } };
await perRun(false, 300);
await perRun(true, 300);
for (let r = 0; r < REPS; r++) {
  for (const [key, g] of r % 2 === 0 ? [["none", false], ["guard", true]] : [["guard", true], ["none", false]]) {
    const { us, cpuUs } = await perRun(g, 2000);
    res[key].us.push(us);
    res[key].cpu.push(cpuUs);
    res[key].ttfd.push(await ttfd(g, 20));
  }
}
console.log("config   µs/run          CPU µs/run      ttfd ms (50 ms model)");
for (const key of ["none", "guard"]) console.log(`${key.padEnd(8)} ${fmt(res[key].us).padEnd(15)} ${fmt(res[key].cpu).padEnd(15)} ${fmt(res[key].ttfd)}`);
const ratio = (k) => (median(res.guard[k]) / median(res.none[k])).toFixed(3);
console.log(`ratio guard/none: run ${ratio("us")}, cpu ${ratio("cpu")}, ttfd ${ratio("ttfd")}; added ttfd ${(median(res.guard.ttfd) - median(res.none.ttfd)).toFixed(2)} ms`);
