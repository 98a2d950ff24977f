// The rollout page: one gray Deployment's status, gates, ReplicaSets and pods, gray events,
// the canary's share over time, and the actions the verbs would accept now.
"use strict";

const [namespace, name] = document.querySelector('meta[name="gray-rollout"]').content.split("/");
const $ = (id) => document.getElementById(id);
let current = null;

function draw(v) {
  current = v;
  $("gone").hidden = true;
  $("phase").replaceChildren(gray.phase(v));
  $("steps").replaceChildren(gray.steps(v));
  $("share").replaceChildren(gray.share(v));
  $("message").textContent = v.message || "";
  $("failure").hidden = !v.failure;
  if (v.failure) $("failure").textContent = `${v.failure.reason}: ${v.failure.message}`;
  drawActions(v.actions);
  $("serves").textContent = servesText(v);
  drawGates(v.gates || []);
  drawRevisions(v);
  $("timeline").replaceChildren(...v.timeline.slice().reverse().map((e) =>
    gray.el("li", {class: "event event-" + e.type.toLowerCase()},
      gray.el("time", {datetime: e.lastSeen || ""}, e.lastSeen ? new Date(e.lastSeen).toLocaleString() : ""),
      " ", gray.el("strong", {}, e.reason), e.count > 1 ? ` ×${e.count}` : "", " ", e.message)));
  if (v.timeline.length === 0) $("timeline").append(gray.el("li", {class: "muted"}, "No gray events kept by the cluster."));
  drawChart(v);
  $("statustext").textContent = v.statusText;
}

// drawActions redraws the buttons only when they change, so a focused one keeps the focus.
function drawActions(actions) {
  const box = $("actions");
  const key = JSON.stringify(actions);
  if (box.dataset.actions === key) return;
  box.dataset.actions = key;
  box.replaceChildren(...actions.map((a) => {
    const b = gray.el("button", {type: "button", "data-action": a.name,
      class: a.name === "abort" || a.name === "undo" ? "danger" : ""}, a.label);
    b.addEventListener("click", () => confirmAction(a));
    return b;
  }));
}

// servesText says which requests gray-controller serves now, as its status lists them: the
// server offers the resume, abort and retry buttons only for these (undo writes the template
// and is no request).
function servesText(v) {
  if (!v.phase) return "";
  if (!v.serves) return "gray-controller does not list what it serves: it is older than this plugin.";
  return v.serves.length ? `gray-controller serves: ${v.serves.join(", ")}` : "gray-controller serves no request now.";
}

function confirmAction(a) {
  const dialog = $("confirm");
  $("confirm-title").textContent = a.label + "?";
  $("confirm-text").textContent = a.confirm;
  dialog.returnValue = "";
  dialog.onclose = async () => {
    if (dialog.returnValue !== "ok") return;
    const answer = $("answer");
    answer.hidden = false;
    answer.className = "answer";
    answer.textContent = `${a.label}: sending…`;
    const res = await gray.act(namespace, name, a.name);
    answer.className = res.ok ? "answer ok" : "answer refused";
    answer.textContent = res.ok ? res.message : `${a.label} refused (${res.status}): ${res.error}`;
  };
  dialog.showModal();
}

function drawGates(gates) {
  const body = $("gates").tBodies[0];
  if (gates.length === 0) {
    body.replaceChildren(gray.el("tr", {}, gray.el("td", {colspan: 7, class: "muted"}, "No gate measured at this hold.")));
    return;
  }
  body.replaceChildren(...gates.map((g) => gray.el("tr", {class: "gate-" + (g.verdict || "measuring").toLowerCase()},
    gray.el("td", {}, g.name, g.dryRun ? " (dry run)" : ""),
    gray.el("td", {}, g.last || "–"),
    gray.el("td", {}, g.value || ""),
    gray.el("td", {}, g.why || ""),
    gray.el("td", {}, `${g.passes} / ${g.fails} / ${g.unsure}`),
    gray.el("td", {}, g.verdict || "measuring"),
    gray.el("td", {}, g.next ? gray.until(g.next) : "–"))));
}

function drawRevisions(v) {
  const nr = v.notReady;
  $("notready").hidden = !nr;
  if (nr) {
    $("notready").replaceChildren(gray.el("strong", {}, `${nr.pods} pods of ${nr.replicaSet} not ready: `), nr.top,
      gray.el("ul", {}, ...nr.reasons.map((r) => gray.el("li", {}, `${r.reason} (${r.pods} pods)`, r.message ? ": " + r.message : ""))));
  }
  $("revisions").replaceChildren(...(v.revisions || []).map((r) => {
    const tags = [r.new && "new", r.stable && "stable", r.aborted && "aborted"].filter(Boolean);
    return gray.el("li", {class: "revision" + (r.new ? " new" : "")},
      gray.el("div", {class: "rshead"}, gray.el("strong", {}, `revision ${r.revision}`), " ", r.replicaSet,
        tags.length ? ` (${tags.join(", ")})` : "",
        ` · ${r.availableReplicas}/${r.replicas} available · `, (r.images || []).map((i) => i.image).join(", ")),
      gray.el("ul", {class: "pods"}, ...r.pods.map((p) => gray.el("li", {class: "pod " + (p.ready ? "ready" : "notready")},
        p.name, ` ${p.phase} ${p.readyContainers}/${p.containers}`, p.restarts ? ` · ${p.restarts} restarts` : ""))));
  }));
}

// drawChart draws the share over time as SVG: a step line from the points, the hold points
// as dashed lines.
function drawChart(v) {
  const W = 720, H = 200, L = 40, B = 24, T = 8, R = 8;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  const s = (tag, attrs) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, val] of Object.entries(attrs)) e.setAttribute(k, val);
    svg.append(e);
    return e;
  };
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("role", "img");
  const points = v.share.map((p) => ({t: Date.parse(p.at), y: p.share}));
  const now = Date.now();
  if (points.length) points.push({t: now, y: points[points.length - 1].y});
  svg.setAttribute("aria-label", points.length
    ? `canary share from ${points[0].y.toFixed(0)}% to ${points[points.length - 1].y.toFixed(0)}%` : "no share recorded yet");
  const t0 = points.length ? points[0].t : now - 60000;
  const span = Math.max(now - t0, 1000);
  const x = (t) => L + ((t - t0) / span) * (W - L - R);
  const y = (p) => T + (1 - p / 100) * (H - T - B);
  for (const p of [0, 50, 100]) {
    s("line", {x1: L, x2: W - R, y1: y(p), y2: y(p), class: "grid"});
    s("text", {x: L - 6, y: y(p) + 4, class: "axis", "text-anchor": "end"}).textContent = p + "%";
  }
  for (const p of v.holdPoints || []) s("line", {x1: L, x2: W - R, y1: y(p), y2: y(p), class: "hold"});
  s("text", {x: L, y: H - 6, class: "axis"}).textContent = new Date(t0).toLocaleTimeString();
  s("text", {x: W - R, y: H - 6, class: "axis", "text-anchor": "end"}).textContent = "now";
  let d = "";
  points.forEach((p, i) => { d += i === 0 ? `M${x(p.t)},${y(p.y)}` : `H${x(p.t)}V${y(p.y)}`; });
  if (d) s("path", {d, class: "line"});
  $("chart").replaceChildren(svg);
}

gray.follow(`/api/rollouts/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/stream`, ["rollout"], (_, v) => {
  if (v.error) {
    $("gone").hidden = false;
    $("gone").textContent = v.error;
    return;
  }
  draw(v);
});
setInterval(() => { if (current) drawChart(current); }, 5000);
