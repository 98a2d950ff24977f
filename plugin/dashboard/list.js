// The list page: every gray Deployment of the dashboard's scope, failures first, filtered by
// namespace, phase and text, kept up to date by the server's stream.
"use strict";

const rows = new Map(); // "namespace/name" -> row
const body = document.querySelector("#rollouts tbody");
const filters = {
  namespace: document.getElementById("filter-namespace"),
  phase: document.getElementById("filter-phase"),
  text: document.getElementById("filter-text"),
};

// rank orders the rows: failed rollouts first, then the ones in flight, then the finished.
function rank(phase) {
  switch (phase) {
    case "Degraded": case "Invalid": return 0;
    case "Aborted": case "RolledBack": return 1;
    case "Progressing": return 2;
    case "Held": return 3;
    case "": case undefined: return 4;
    default: return 5; // Complete
  }
}

function matches(r) {
  if (filters.namespace.value && r.namespace !== filters.namespace.value) return false;
  if (filters.phase.value && (r.phase || "Unreported") !== filters.phase.value) return false;
  const text = filters.text.value.trim().toLowerCase();
  if (!text) return true;
  const hay = [r.namespace, r.name, r.phase, r.message, r.failure && r.failure.reason, r.failure && r.failure.message]
    .filter(Boolean).join(" ").toLowerCase();
  return hay.includes(text);
}

function row(r) {
  const link = gray.el("a", {href: `/rollouts/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}`}, r.name);
  const failure = r.failure
    ? gray.el("span", {class: "failure-reason", title: r.failure.message}, r.failure.reason)
    : gray.el("span", {class: "muted"}, "–");
  const tr = gray.el("tr", {"data-key": `${r.namespace}/${r.name}`, "data-phase": r.phase || "Unreported"},
    gray.el("td", {}, r.namespace),
    gray.el("td", {class: "name"}, link),
    gray.el("td", {}, gray.phase(r)),
    gray.el("td", {}, gray.steps(r)),
    gray.el("td", {}, gray.share(r)),
    gray.el("td", {}, gray.gates(r)),
    gray.el("td", {class: "age", "data-since": r.phase === "Held" ? r.heldAt || "" : ""}, r.phase === "Held" ? gray.age(r.heldAt) : ""),
    gray.el("td", {}, failure));
  if (r.message) tr.title = r.message;
  return tr;
}

// options sets a filter's choices when they change, keeping its choice while it is one.
function options(select, values) {
  const list = [...values].sort();
  if (select.dataset.values === list.join("\n")) return;
  select.dataset.values = list.join("\n");
  const current = select.value;
  select.replaceChildren(gray.el("option", {value: ""}, "all"), ...list.map((v) => gray.el("option", {value: v}, v)));
  select.value = values.has(current) ? current : "";
}

// trs are the drawn rows by key; changed are the keys whose row must be drawn again.
const trs = new Map();
const changed = new Set();

function draw() {
  const all = [...rows.values()];
  options(filters.namespace, new Set(all.map((r) => r.namespace)));
  options(filters.phase, new Set(all.map((r) => r.phase || "Unreported")));
  for (const k of changed) {
    const r = rows.get(k);
    const old = trs.get(k);
    if (!r) { trs.delete(k); if (old) old.remove(); continue; }
    const tr = row(r);
    trs.set(k, tr);
    if (old) old.replaceWith(tr);
  }
  changed.clear();
  const shown = all.filter(matches).sort((a, b) =>
    rank(a.phase) - rank(b.phase) || a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  // A change that keeps the order replaced its row in place above; only a new order moves rows.
  const order = shown.map((r) => trs.get(`${r.namespace}/${r.name}`));
  const current = body.children;
  if (order.length !== current.length || order.some((tr, i) => current[i] !== tr)) body.replaceChildren(...order);
  document.getElementById("count").textContent = `${shown.length} of ${all.length}`;
  document.getElementById("empty").hidden = all.length > 0;
}

// Redraws come at most once a frame, however many updates arrive.
let pending = false;
function redraw() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; draw(); });
}

gray.follow("/api/stream", ["rows"], (_, u) => {
  if (u.reset) {
    for (const k of rows.keys()) changed.add(k);
    rows.clear();
  }
  for (const r of u.upsert) {
    const k = `${r.namespace}/${r.name}`;
    rows.set(k, r);
    changed.add(k);
  }
  for (const k of u.remove) {
    rows.delete(k);
    changed.add(k);
  }
  redraw();
});

document.getElementById("filters").addEventListener("submit", (e) => e.preventDefault());
for (const f of Object.values(filters)) f.addEventListener("input", redraw);
setInterval(() => {
  for (const td of body.querySelectorAll("td.age[data-since]")) td.textContent = gray.age(td.dataset.since);
}, 1000);
