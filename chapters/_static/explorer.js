(function () {
  "use strict";
  performance.mark("explorer-script");
  const config = JSON.parse(document.currentScript.dataset.config);
  const uid = config.uid;
  const $ = (part) => document.getElementById(uid + "-" + part);
  const payload = JSON.parse($("data").textContent);
  performance.mark("explorer-data");
  const runs = payload.runs;
  const RUN_FIELDS = ["arch", "tau", "head_dim", "seed"];
  const decoded = new Map();
  const state = { run: runs[0], t: 0, layer: 0, head: 0, measure: payload.primary, sweep: "tau" };
  const measureLabel = Object.fromEntries(payload.measures);
  let models = null;
  let pending = 0;

  function fail(error) {
    const line = $("run");
    line.textContent = "The explorer could not draw this run: " + error;
    line.classList.add("ax-error");
    console.error(error);
  }

  function bytes(b64) {
    const s = atob(b64);
    const out = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out;
  }
  const floats = (b64) => new Float32Array(bytes(b64).buffer);
  async function inflate(b64) {
    const stream = new Blob([bytes(b64)]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  function decode(run) {
    if (!decoded.has(run.key)) {
      const a = run.attention;
      decoded.set(run.key, inflate(a.matrices).then((matrices) => ({
        matrices, scale: floats(a.scale), sv: floats(a.singular_values), measures: floats(a.measures),
      })));
    }
    return decoded.get(run.key);
  }

  const unique = (values) => [...new Set(values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  function fill(name, options, value) {
    const select = $(name);
    select.replaceChildren(...options.map(([v, label]) => new Option(label, String(v))));
    select.value = String(value);
  }
  const valueOf = (name) => $(name).value;

  function fillRunControls() {
    const run = state.run;
    fill("arch", unique(runs.map((r) => r.arch)).map((a) => [a, payload.archs[a] || a]), run.arch);
    fill("tau", unique(runs.map((r) => r.tau)).map((t) => [t, String(t)]), run.tau);
    fill("head_dim", unique(runs.map((r) => r.head_dim)).map((d) => [d, String(d)]), run.head_dim);
    fill("seed", unique(runs.map((r) => r.seed)).map((s) => [s, String(s)]), run.seed);
    const steps = run.attention.steps;
    state.t = Math.min(state.t, steps.length - 1);
    fill("step", steps.map((s, i) => [i, s + (i === 0 ? " (initial)" : i === steps.length - 1 ? " (final)" : "")]), state.t);
    state.layer = Math.min(state.layer, run.num_layers - 1);
    fill("layer", Array.from({ length: run.num_layers }, (_, i) => [i, String(i + 1)]), state.layer);
    state.head = Math.min(state.head, run.num_heads - 1);
    fill("head", Array.from({ length: run.num_heads }, (_, i) => [i, String(i + 1)]), state.head);
  }

  function pick(changed) {
    // the run with the changed setting that shares most of the others, in the order of RUN_FIELDS
    let candidates = runs;
    for (const field of [changed, ...RUN_FIELDS.filter((f) => f !== changed)]) {
      const match = candidates.filter((r) => String(r[field]) === valueOf(field));
      if (match.length) candidates = match;
    }
    return candidates[0];
  }

  const model = (part) => models.get_model_by_name(uid + "-" + part);
  const quote = (token) => JSON.stringify(token);

  function drawMatrix(run, d, idx) {
    const a = run.attention, n = a.n;
    const cells = a.causal ? (n * (n + 1)) / 2 : n * n;
    const q = d.matrices.subarray(idx * cells, (idx + 1) * cells);
    const scale = d.scale[idx] / a.levels;
    const tokens = a.tokens;
    const x = [], y = [], p = [], query = [], key = [];
    let c = 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const v = a.causal ? (j <= i ? q[c++] * scale : 0) : q[i * n + j] * scale;
        x.push(j); y.push(i); p.push(v); query.push(quote(tokens[i])); key.push(quote(tokens[j]));
      }
    }
    model("heat-source").data = { x, y, p, query, key };
    model("heat-mapper").high = d.scale[idx] > 0 ? d.scale[idx] : 1;
    model("heat").title.text = "attention, layer " + (state.layer + 1) + ", head " + (state.head + 1) + ", step " + a.steps[state.t];
    const text = run.tokenizer === "bytelevel" ? tokens.join("") : tokens.join(" ").replace(/ ##/g, "");
    $("text").textContent = "Probe sequence (" + n + " tokens): " + text;
  }

  function drawSpectrum(run, d, idx) {
    const n = run.attention.n;
    const sv = Array.from(d.sv.subarray(idx * n, (idx + 1) * n));
    const floor = n * 2.220446049250313e-16 * sv[0]; // float64 round-off: below it a singular value is noise
    model("spectrum-source").data = { i: sv.map((_, i) => i + 1), sigma: sv.map((s) => (s > floor ? s : NaN)) };
    const colors = ["#d62728", "#2ca02c", "#9467bd", "#8c564b"];
    const xs = [], ys = [], label = [], color = [];
    payload.thresholds.forEach((t, k) => {
      const level = t.atol != null ? t.atol : t.rtol * sv[0];
      xs.push([1, n]); ys.push([level, level]); color.push(colors[k % colors.length]);
      label.push(t.label + (t.atol != null ? "" : " × σ₁"));
    });
    model("threshold-source").data = { xs, ys, label, color };
    const M = payload.measures.length;
    const rows = payload.measures.map(([name, text], k) => {
      const value = d.measures[idx * M + k];
      const at = run.rank_steps.indexOf(run.attention.steps[state.t]);
      const mean = run.rank[name] && at >= 0 ? run.rank[name][at] : null;
      const fmt = (v) => (v == null || Number.isNaN(v) ? "–" : Number(v).toPrecision(4));
      return "<tr><td>" + text + "</td><td data-measure=\"" + name + "\">" + fmt(value) + "</td><td>" + fmt(mean) + "</td></tr>";
    });
    $("measures").innerHTML =
      "<thead><tr><th>measure</th><th>this matrix</th><th>run mean at this step</th></tr></thead><tbody>" +
      rows.join("") + "</tbody>";
  }

  function drawCurves(run) {
    const m = state.measure;
    const same = runs.filter((r) => r.arch === run.arch && r.head_dim === run.head_dim && r !== run && r.rank[m]);
    model("curve-context").data = {
      xs: same.map((r) => r.rank_steps), ys: same.map((r) => r.rank[m]), color: same.map((r) => r.color),
    };
    model("curve-source").data = { step: run.rank_steps, value: run.rank[m] || [] };
    model("loss-context").data = {
      xs: same.map((r) => r.loss_steps), ys: same.map((r) => r.val_loss), color: same.map((r) => r.color),
    };
    model("loss-source").data = { step: run.loss_steps, value: run.val_loss };
    const step = run.attention.steps[state.t];
    model("curve-marker").location = step;
    model("loss-marker").location = step;
    model("curves").title.text = "mean through training";
    model("curves-yaxis").axis_label = measureLabel[m];
  }

  function drawSweep(run) {
    const m = state.measure, byTau = state.sweep === "tau";
    const group = runs.filter((r) => r.arch === run.arch && (byTau ? r.head_dim === run.head_dim : r.tau === run.tau));
    const at = (r) => (byTau ? r.tau : r.head_dim);
    model("sweep-source").data = {
      x: group.map(at), initial: group.map((r) => r.initial[m]), final: group.map((r) => r.final[m]),
      seed: group.map((r) => r.seed), key: group.map((r) => r.arch + "-" + r.key),
    };
    model("sweep-selected").data = { x: [at(run)], initial: [run.initial[m]], final: [run.final[m]] };
    model("sweep-ticker").ticks = unique(group.map(at));
    model("sweep-xaxis").axis_label = byTau ? "temperature ratio τ (log scale)" : "head dimension dₕ (log scale)";
    model("sweep-yaxis").axis_label = measureLabel[m];
    model("sweep").title.text = byTau
      ? "initial and final, against τ (dₕ = " + run.head_dim + ")"
      : "initial and final, against dₕ (τ = " + run.tau + ")";
  }

  function describe(run) {
    const loss = (v) => (v == null ? "n/a" : v.toFixed(3));
    return (payload.archs[run.arch] || run.arch) + ", τ = " + run.tau + ", dₕ = " + run.head_dim + " (" +
      run.num_heads + (run.num_heads === 1 ? " head" : " heads") + "), seed " + run.seed + ": run " + run.arch + "-" + run.key + ", " + run.status +
      (run.failure ? " (" + run.failure + ")" : "") + "; validation loss " + loss(run.initial_val_loss) + " → " +
      loss(run.final_val_loss) + " nats/token (" + payload.profile + " profile, " + payload.corpus + ")";
  }

  async function draw() {
    const ticket = ++pending;
    const run = state.run;
    try {
      const d = await decode(run);
      if (ticket !== pending) return;
      const idx = (state.t * run.num_layers + state.layer) * run.num_heads + state.head;
      drawMatrix(run, d, idx);
      drawSpectrum(run, d, idx);
      drawCurves(run);
      drawSweep(run);
      const line = $("run");
      line.classList.remove("ax-error");
      line.textContent = describe(run);
      const root = $("controls").parentElement;
      root.dataset.run = run.arch + "-" + run.key;
      root.dataset.drawn = String(ticket);
      performance.mark("explorer-drawn");
      root.dataset.drawnMs = String(Math.round(performance.now()));  // since navigation started
    } catch (error) {
      fail(error);
    }
  }

  function onChange(event) {
    const name = event.target.name;
    if (RUN_FIELDS.includes(name)) {
      state.run = pick(name);
      fillRunControls();
    } else if (name === "step") state.t = Number(valueOf("step"));
    else if (name === "layer") state.layer = Number(valueOf("layer"));
    else if (name === "head") state.head = Number(valueOf("head"));
    else if (name === "measure") state.measure = valueOf("measure");
    else if (name === "sweep") state.sweep = valueOf("sweep");
    draw();
  }

  function start() {
    fill("measure", payload.measures, state.measure);
    fill("sweep", [["tau", "temperature ratio τ"], ["head_dim", "head dimension dₕ"]], state.sweep);
    fillRunControls();
    $("controls").addEventListener("change", onChange);
    draw();
  }

  let tries = 0;
  (function wait() {
    const docs = (window.Bokeh && window.Bokeh.documents) || [];
    models = docs.find((doc) => doc.get_model_by_name(uid + "-heat-source")) || null;
    if (models) {
      performance.mark("explorer-bokeh");
      return start();
    }
    if (++tries > 800) return fail("the plotting library did not start");
    setTimeout(wait, 25);
  })();
})();
