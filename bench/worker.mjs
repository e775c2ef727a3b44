// Adapted from the workplace's bench-peers harness (../shared/bench-peers/bench/worker.mjs); adds W6 (fan-out).
// One measurement per process: node bench/worker.mjs <adapter-module> <workload> '<json params>'
// Prints a single line "RESULT {json}". Run under /usr/bin/time -v for peak RSS (run.mjs does this).
import path from "node:path";
import { pathToFileURL } from "node:url";
import { nsToUs, nsToMs, resetMarkers, turnStats, resetSource, SRC, sleep, killLeakedTickers } from "./common.mjs";

const [adapterArg, workload, paramsJson = "{}"] = process.argv.slice(2);
const params = JSON.parse(paramsJson);
const mod = await import(pathToFileURL(path.resolve(adapterArg)).href);
const warm = params.warm ?? true;

async function main() {
  switch (workload) {
    case "w1": {
      if (warm) { resetMarkers(); await mod.w1({ ...params, T: 20 }); }
      resetMarkers();
      const r = await mod.w1(params);
      const ts = turnStats();
      return { ...r, wallMs: nsToMs(r.wallNs), usPerTurn: nsToUs(r.wallNs) / (params.T + 1), ...ts };
    }
    case "w2": {
      if (warm) await mod.w2({ ...params, N: 1000 });
      const r = await mod.w2(params);
      const ok = r.deltas === params.N;
      return { ...r, ok, wallMs: nsToMs(r.wallNs), deltasPerSec: r.deltas / (Number(r.wallNs) / 1e9) };
    }
    case "w3": {
      return await mod.w3(params);
    }
    case "w4": {
      if (warm) await mod.w4({ ...params, delayMs: 1 });
      const r = await mod.w4(params);
      return { ...r, wallMs: nsToMs(r.wallNs) };
    }
    case "w5": {
      if (warm && mod.w2) await mod.w2({ N: 1000 }); // warm the streaming path
      resetSource();
      const r = await mod.w5(params);
      const atSettle = SRC.afterAbort;
      await sleep(100); // give a leaked producer time to show itself
      const after100 = SRC.afterAbort;
      const leaked = killLeakedTickers();
      return { ...r, settleMs: nsToMs(r.settleNs), producedTotal: SRC.produced, sourceStopReason: SRC.stopReason ?? null, producedAfterAbortAtSettle: atSettle, producedAfterAbortPlus100ms: after100, leakedProducers: leaked };
    }
    case "w5net": {
      // W5 over a real socket (adapter-specific; the adapter measures the server side itself).
      const r = await mod.w5net(params);
      return { ...r, settleMs: nsToMs(r.settleNs) };
    }
    case "w6": {
      // Fan-out: no warm-up (many agents started cold together is the point).
      const r = await mod.w6(params);
      return { ...r, wallMs: nsToMs(r.wallNs) };
    }
    default:
      throw new Error("unknown workload " + workload);
  }
}

const hard = setTimeout(() => { console.log("RESULT " + JSON.stringify({ error: "worker-timeout" })); process.exit(3); }, (params.timeoutS ?? 300) * 1000);
hard.unref();
try {
  const out = await main();
  console.log("RESULT " + JSON.stringify(out, (k, v) => (typeof v === "bigint" ? Number(v) : v)));
  process.exit(0);
} catch (e) {
  console.log("RESULT " + JSON.stringify({ error: String(e?.stack ?? e).slice(0, 800) }));
  process.exit(2);
}
