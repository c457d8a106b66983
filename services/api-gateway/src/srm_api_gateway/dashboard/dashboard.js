// The SRM dashboard: reads the gateway's own JSON API every few seconds and draws it.
// Written here, no libraries: a replication graph, two charts, tables and lists. At any
// partition count it asks for counts and the worst few (a page of each), never for
// every topic or partition: a constant number of requests per replication.
"use strict";

const REFRESH_MS = 5000;
const WORST = 10;
const PALETTE = ["#2f6fde", "#c2185b", "#00897b", "#ef6c00", "#6a1b9a", "#546e7a"];

async function json(path) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

function el(tag, attrs = {}, text) {
  const svg = ["svg", "circle", "line", "path", "text", "polyline", "g", "marker", "defs"];
  const node = svg.includes(tag)
    ? document.createElementNS("http://www.w3.org/2000/svg", tag)
    : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function fmt(value, unit = "") {
  if (value === null || value === undefined) return "–";
  const rounded = Math.abs(value) >= 100 ? Math.round(value) : Math.round(value * 10) / 10;
  return `${rounded.toLocaleString("en-US")}${unit}`;
}

function latest(series) {
  const points = (series && series.series) || [];
  return points.length ? points[points.length - 1].value : null;
}

function drawGraph(replications) {
  const svg = document.getElementById("graph");
  svg.replaceChildren();
  const clusters = [...new Set(replications.flatMap((r) => [r.source, r.target]))].sort();
  const cx = 320, cy = 120, radius = clusters.length > 1 ? 90 : 0;
  const at = {};
  clusters.forEach((name, i) => {
    // The first cluster on the left, the others round the circle (two: side by side).
    const angle = Math.PI + (2 * Math.PI * i) / clusters.length;
    at[name] = [cx + radius * Math.cos(angle) * 2, cy + radius * Math.sin(angle) * 0.8];
  });
  const defs = el("defs");
  for (const status of ["running", "halted", "pending", "disabled"]) {
    const marker = el("marker", { id: `arrow-${status}`, viewBox: "0 0 10 10", refX: "22",
      refY: "5", markerWidth: "8", markerHeight: "8", orient: "auto-start-reverse" });
    marker.append(el("path", { d: "M 0 0 L 10 5 L 0 10 z", class: `edge ${status}` }));
    defs.append(marker);
  }
  svg.append(defs);
  for (const r of replications) {
    const [x1, y1] = at[r.source], [x2, y2] = at[r.target];
    const bend = r.source < r.target ? 30 : -30;
    const mx = (x1 + x2) / 2 + bend, my = (y1 + y2) / 2 + bend;
    svg.append(el("path", { d: `M ${x1} ${y1} Q ${mx} ${my} ${x2} ${y2}`,
      class: `edge ${r.status}`, "marker-end": `url(#arrow-${r.status})`,
      "data-flow": `${r.source}->${r.target}` }));
  }
  for (const name of clusters) {
    const g = el("g", { class: "node" });
    g.append(el("circle", { cx: at[name][0], cy: at[name][1], r: 16 }));
    g.append(el("text", { x: at[name][0] - 20, y: at[name][1] + 34 }, name));
    svg.append(g);
  }
}

function drawChart(id, seriesByFlow) {
  const svg = document.getElementById(id);
  svg.replaceChildren();
  const width = 640, height = 160, left = 48, bottom = 20;
  const all = Object.values(seriesByFlow).flatMap((s) => s.series || []);
  const values = all.map((p) => p.value).filter((v) => v !== null);
  const times = all.map((p) => p.timestamp);
  svg.append(el("line", { x1: left, y1: height - bottom, x2: width, y2: height - bottom,
    class: "axis" }));
  if (!values.length) {
    svg.append(el("text", { x: left + 8, y: 70 }, "no measurements yet"));
    return;
  }
  const top = Math.max(...values, 1), t0 = Math.min(...times), t1 = Math.max(...times);
  const x = (t) => left + ((t - t0) / Math.max(t1 - t0, 1)) * (width - left - 8);
  const y = (v) => height - bottom - (v / top) * (height - bottom - 10);
  svg.append(el("text", { x: 2, y: 14 }, fmt(top)));
  svg.append(el("text", { x: 2, y: height - bottom }, "0"));
  Object.entries(seriesByFlow).forEach(([flow, s], i) => {
    const points = (s.series || []).filter((p) => p.value !== null)
      .map((p) => `${x(p.timestamp)},${y(p.value)}`).join(" ");
    const color = PALETTE[i % PALETTE.length];
    svg.append(el("polyline", { points, fill: "none", stroke: color, "stroke-width": 2,
      "data-flow": flow }));
    svg.append(el("text", { x: left + 8 + 140 * i, y: height - 4, fill: color }, flow));
  });
}

function row(cells) {
  const tr = el("tr");
  for (const [text, cls] of cells) tr.append(el("td", cls ? { class: cls } : {}, text));
  return tr;
}

// Per replication: the ten worst topics and partitions by lag and the partition counts,
// one request each whatever the partition count.
async function worstOf(active) {
  const topicRows = [], partitionRows = [], counts = [];
  await Promise.all(active.map(async (r) => {
    const base = `/v2/replications/${r.source}/${r.target}`, flow = `${r.source}->${r.target}`;
    const [topics, parts] = await Promise.all([
      json(`${base}/topics?sort=lag&limit=${WORST}`),
      json(`${base}/partitions?sort=lag&limit=${WORST}`)]);
    for (const t of topics.topics) {
      const halted = t.halted_partitions;
      topicRows.push(row([[flow], [t.topic], [t.remote_topic], [fmt(t.records_per_s), "num"],
        [fmt(t.lag_records), "num"],
        [halted.slice(0, 8).join(", ") + (halted.length > 8 ? ` (${halted.length})` : "") || "–",
          halted.length ? "halted" : ""]]));
    }
    const c = parts.counts;
    counts.push(el("li", { "data-flow": flow }, `${flow}: ${fmt(c.partitions)} partitions,`
      + ` ${fmt(c.measured)} measured, ${fmt(c.lagging)} lagging`
      + ` (${fmt(c.lag_records)} records behind), ${fmt(c.halted)} halted`));
    for (const p of parts.partitions) {
      partitionRows.push(row([[flow], [`${p.topic}-${p.partition}`], [fmt(p.lag_records), "num"],
        [fmt(p.lag_ms), "num"], [fmt(p.records_per_s), "num"],
        [p.halted ? p.halt_reason : "–", p.halted ? "halted" : ""]]));
    }
  }));
  return { topicRows, partitionRows, counts };
}

async function refresh() {
  const [{ replications }, freshness, audit] = await Promise.all([
    json("/v2/replications"), json("/v1/freshness"), json("/v1/audit?limit=8"),
  ]);
  const fresh = Object.fromEntries(
    freshness.replications.map((f) => [`${f.source}->${f.target}`, f]));
  drawGraph(replications);
  const active = replications.filter((r) => r.enabled);
  const metric = (r, name) =>
    json(`/v2/replication-metrics/${r.source}/${r.target}/${name}?minutes=30`)
      .catch(() => ({ series: [] }));
  const rates = {}, p50 = {}, p99 = {}, lag = {};
  const series = Promise.all(active.map(async (r) => {
    const flow = `${r.source}->${r.target}`;
    [rates[flow], p50[flow], p99[flow], lag[flow]] = await Promise.all([
      metric(r, "record-rate"), metric(r, "replication-latency-ms-p50"),
      metric(r, "replication-latency-ms-p99"), metric(r, "replication-records-lag")]);
  }));
  const worst = worstOf(active);  // asked at the same time as the series
  await series;
  const flows = document.querySelector("#flows tbody");
  flows.replaceChildren(...replications.map((r) => {
    const flow = `${r.source}->${r.target}`, f = fresh[flow] || {};
    const met = f.met === null || f.met === undefined ? "–" : f.met ? "met" : "missed";
    return row([[flow], [r.status, r.status], [fmt(r.topics), "num"],
      [fmt(r.partitions), "num"], [fmt(latest(rates[flow])), "num"], [fmt(latest(p50[flow]), " ms"), "num"],
      [fmt(latest(p99[flow]), " ms"), "num"], [fmt(latest(lag[flow])), "num"],
      [met, met === "–" ? "" : met]]);
  }));
  drawChart("throughput", rates);
  drawChart("latency", p99);
  const { topicRows, partitionRows, counts } = await worst;
  document.querySelector("#topics tbody").replaceChildren(...topicRows);
  document.getElementById("partition-counts").replaceChildren(...counts);
  document.querySelector("#partitions tbody").replaceChildren(...partitionRows);
  const halted = replications.flatMap((r) => r.halted.map((h) =>
    el("li", { class: "halted" },
      `${r.source}->${r.target} ${h.topic}-${h.partition}: ${h.kind}: ${h.reason}`)).concat(
    r.halted_count > r.halted.length
      ? [el("li", { class: "halted" }, `${r.source}->${r.target}: and`
        + ` ${fmt(r.halted_count - r.halted.length)} more (${fmt(r.halted_count)} halted)`)]
      : []));
  document.getElementById("halted").replaceChildren(
    ...(halted.length ? halted : [el("li", {}, "none")]));
  document.getElementById("audit").replaceChildren(...audit.changes.slice().reverse()
    .map((c) => el("li", {}, `${c.at} ${c.change} [${c.by || "unknown"}]`)));
  document.getElementById("updated").textContent =
    `updated ${new Date().toISOString().replace("T", " ").slice(0, 19)} UTC`;
  if (!document.body.dataset.loaded) {
    document.body.dataset.loadMs = String(Math.round(performance.now()));
  }
  document.body.dataset.loaded = "true";
}

async function loop() {
  try {
    await refresh();
  } catch (error) {
    document.getElementById("updated").textContent = `cannot reach the gateway: ${error}`;
  }
  setTimeout(loop, REFRESH_MS);
}

loop();
