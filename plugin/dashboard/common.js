// Shared by both pages of kubectl gray dashboard: the stream, the helpers that draw the
// pieces both show (phase, hold points, canary share, gates), and ages.
"use strict";

const gray = {
  token: document.querySelector('meta[name="gray-token"]').content,

  // el builds an element: el("td", {class: "x"}, "text", child).
  el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v; else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) {
      if (c === undefined || c === null) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  },

  // follow opens the server-sent events at url, calls on(event, data) for each message and
  // shows the connection's state. EventSource reconnects by itself when the stream drops;
  // the server then sends the whole state again.
  follow(url, events, on) {
    const state = document.getElementById("connection");
    const set = (text, cls) => { state.textContent = text; state.className = "connection " + cls; };
    const source = new EventSource(url);
    source.onopen = () => set("live", "ok");
    source.onerror = () => set("reconnecting…", "down");
    for (const name of events) {
      source.addEventListener(name, (m) => on(name, JSON.parse(m.data)));
    }
    source.addEventListener("failure", (m) => set(JSON.parse(m.data).error, "down"));
    return source;
  },

  // act posts an action with this run's token; the answer is {message} or {error}.
  async act(namespace, name, action) {
    const res = await fetch(`/api/rollouts/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/${action}`, {
      method: "POST", headers: {"X-Gray-Token": gray.token}, credentials: "same-origin",
    });
    let body;
    try { body = await res.json(); } catch (e) { body = {error: `HTTP ${res.status}`}; }
    return {ok: res.ok, status: res.status, ...body};
  },

  phase(v) {
    const p = v.phase || "Unreported";
    return gray.el("span", {class: "phase phase-" + p.toLowerCase()}, p, v.stale ? " (stale)" : "");
  },

  // steps draws the hold points, each with its own hold duration where it names one, the current
  // one marked with when it moves on by itself.
  steps(v) {
    const ol = gray.el("ol", {class: "stepbar", "aria-label": "hold points"});
    const points = [...(v.holdPoints || [])];
    if (points.length === 0 || points[points.length - 1] !== 100) points.push(100);
    const durations = v.holdPointDurations || [];
    const resumesAt = v.policy && v.policy.resumesAt;
    points.forEach((p, i) => {
      const state = i < v.step ? "done" : i === v.step ? "current" : "todo";
      const own = durations[i] && durations[i] !== "0s" ? durations[i] : null;
      let title = own ? `${p}% for ${own}` : `${p}%`;
      if (state === "current" && resumesAt) title += `, moves on by itself at ${new Date(resumesAt).toLocaleTimeString()}`;
      const li = gray.el("li", {class: "step step-" + state, title}, `${p}%`, own && gray.el("small", {}, ` ${own}`));
      if (state === "current") li.setAttribute("aria-current", "step");
      ol.append(li);
    });
    return ol;
  },

  // share draws the canary: available new pods, the step's target, the replicas.
  share(v) {
    const replicas = v.replicas || 0;
    const avail = v.newAvailableReplicas || 0;
    const target = v.target || 0;
    const pct = (n) => (replicas ? Math.min(100, (100 * n) / replicas) : 0) + "%";
    const bar = gray.el("div", {class: "share", role: "img",
      "aria-label": `${avail} of ${replicas} replicas on the new revision, target ${target}`});
    const fill = gray.el("div", {class: "share-fill"});
    fill.style.width = pct(avail);
    const mark = gray.el("div", {class: "share-target"});
    mark.style.left = pct(target);
    bar.append(fill, mark);
    return gray.el("div", {class: "sharecell"}, bar,
      gray.el("span", {class: "sharetext"}, `${avail} / ${target} / ${replicas}`));
  },

  gates(v) {
    const gates = v.gates || [];
    if (gates.length === 0) return gray.el("span", {class: "muted"}, "–");
    const ul = gray.el("ul", {class: "gatelist"});
    for (const g of gates) {
      const verdict = g.verdict || (g.last ? "measuring" : "waiting");
      ul.append(gray.el("li", {class: "gate gate-" + verdict.toLowerCase(), title: g.why || ""},
        g.name, ": ", verdict, g.dryRun ? " (dry run)" : ""));
    }
    return ul;
  },

  // age says how long ago a time was, like kubectl: 45s, 3m10s, 2h5m, 4d.
  age(t) { return t ? gray.span((Date.now() - Date.parse(t)) / 1000) : ""; },

  // until says how long until a time: "in 20s", or "due" once passed.
  until(t) {
    const s = (Date.parse(t) - Date.now()) / 1000;
    return s > 0 ? "in " + gray.span(s) : "due";
  },

  span(seconds) {
    const s = Math.max(0, Math.floor(seconds));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + (s % 60 ? (s % 60) + "s" : "");
    if (s < 86400) return Math.floor(s / 3600) + "h" + Math.floor((s % 3600) / 60) + "m";
    return Math.floor(s / 86400) + "d";
  },
};
