// The live view of a running SAT: the state first, then the run's events
// (server-sent), applied as the server applies them (state.go).
"use strict";
(function () {
  var token = "";
  var role = "viewer";
  var st = null;
  var pending = "";
  var drawQueued = false;
  window.__liveErrors = [];
  window.addEventListener("error", function (e) { window.__liveErrors.push(String(e.message)); });
  window.addEventListener("unhandledrejection", function (e) { window.__liveErrors.push(String(e.reason)); });

  function $(id) { return document.getElementById(id); }
  function readToken() {
    var m = /(?:^|[#&])token=([^&]+)/.exec(location.hash);
    if (m) {
      token = decodeURIComponent(m[1]);
      try { sessionStorage.setItem("seam-token", token); } catch (e) { /* private mode */ }
      history.replaceState(null, "", location.pathname);
    } else {
      try { token = sessionStorage.getItem("seam-token") || ""; } catch (e) { token = ""; }
    }
  }

  function fmtS(s) {
    if (s === undefined || s === null) { return "–"; }
    s = Math.max(0, Math.round(s));
    var h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
    var mm = (h > 0 && m < 10 ? "0" : "") + m, xx = (x < 10 ? "0" : "") + x;
    return (h > 0 ? h + ":" : "") + mm + ":" + xx;
  }
  function num(v) { return (Math.abs(v) >= 1000 || v === Math.round(v)) ? v.toFixed(0) : v.toPrecision(4); }
  function logLine(ev, line) {
    var t = new Date(ev.at);
    st.log.push(t.toISOString().substr(11, 8) + " " + line);
    if (st.log.length > 50) { st.log.shift(); }
  }
  function reason(t) { return t ? " (" + t + ")" : ""; }

  function apply(ev) {
    st.seq = ev.seq;
    st.dropped = ev.dropped || 0;
    if (ev.left) { st.left = ev.left; }
    switch (ev.kind) {
    case "run": st.cases = ev.cases; st.status = "running"; break;
    case "case":
      st.case = ev.case; st.step = null; st.traces = {}; st.margins = {};
      if (st.status === "waiting") { st.status = "running"; }
      logLine(ev, "case " + ev.case.id + " started");
      break;
    case "step": st.step = ev.step; break;
    case "samples":
      (ev.samples || []).forEach(function (s) {
        var tr = st.traces[s.Channel] || (st.traces[s.Channel] = []);
        tr.push({ t: Date.parse(s.Time), v: s.Value, q: s.Quality });
        if (tr.length > 2000) { tr.shift(); }
        st.samples++;
      });
      (ev.margins || []).forEach(function (m) { st.margins[m.interlock] = m; });
      break;
    case "case_end": st.outcomes[ev.case.id] = ev.outcome; logLine(ev, ev.case.id + ": " + ev.outcome + reason(ev.text)); break;
    case "pause": st.status = "pausing"; st.by = ev.by; logLine(ev, "pause asked by " + ev.by); break;
    case "paused": st.status = "paused"; st.by = ev.by; logLine(ev, "paused by " + ev.by + ": load at 0 kW"); break;
    case "resume": st.status = "running"; st.by = ""; logLine(ev, "resumed by " + ev.by); break;
    case "abort": logLine(ev, ev.text); break;
    case "end": st.status = "ended"; st.outcome = ev.outcome; st.text = ev.text; logLine(ev, "run " + ev.outcome + reason(ev.text)); break;
    }
  }

  function svg(tag, attrs) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }

  // plot draws one channel's trace against the envelopes of its checks.
  function plot(channel, points, envs) {
    var W = 420, H = 160, L = 50, R = 8, T = 8, B = 20;
    var box = document.createElement("div");
    box.className = "trace";
    box.dataset.channel = channel;
    box.dataset.points = String(points.length);
    var title = document.createElement("h3");
    var unit = envs.length ? (envs[0].unit || "") : "";
    var last = points.length ? points[points.length - 1] : null;
    title.textContent = channel + (last ? " · " + num(last.v) + " " + unit + (last.q !== "good" ? " (" + last.q + ")" : "") : "");
    box.appendChild(title);
    var s = svg("svg", { "class": "plot", width: W, height: H, viewBox: "0 0 " + W + " " + H });
    var lo = Infinity, hi = -Infinity;
    points.forEach(function (p) { if (p.q === "good") { lo = Math.min(lo, p.v); hi = Math.max(hi, p.v); } });
    envs.forEach(function (e) {
      if (e.lo !== undefined) { lo = Math.min(lo, e.lo); hi = Math.max(hi, e.lo); }
      if (e.hi !== undefined) { lo = Math.min(lo, e.hi); hi = Math.max(hi, e.hi); }
    });
    if (!isFinite(lo)) { lo = 0; hi = 1; }
    if (hi - lo < 1e-9) { lo -= 1; hi += 1; }
    var pad = (hi - lo) * 0.08; lo -= pad; hi += pad;
    var t1 = last ? last.t : 0, t0 = points.length ? points[0].t : 0;
    if (t1 - t0 < 1000) { t0 = t1 - 1000; }
    function x(t) { return L + (W - L - R) * (t - t0) / (t1 - t0); }
    function y(v) { return T + (H - T - B) * (hi - v) / (hi - lo); }
    envs.forEach(function (e) {
      var a = e.lo !== undefined ? e.lo : lo, b = e.hi !== undefined ? e.hi : hi;
      s.appendChild(svg("rect", { "class": "band", x: L, y: y(b), width: W - L - R, height: Math.max(0, y(a) - y(b)) }));
      [e.lo, e.hi].forEach(function (v) {
        if (v !== undefined) { s.appendChild(svg("line", { "class": "limit", x1: L, x2: W - R, y1: y(v), y2: y(v) })); }
      });
    });
    var d = "";
    points.forEach(function (p) {
      if (p.q !== "good") { return; }
      d += (d ? " L" : "M") + x(p.t).toFixed(1) + " " + y(p.v).toFixed(1);
    });
    if (d) { s.appendChild(svg("path", { "class": "line", d: d })); }
    [[hi, T + 8], [lo, H - B]].forEach(function (a) {
      var t = svg("text", { x: 2, y: a[1] }); t.textContent = num(a[0]); s.appendChild(t);
    });
    var span = svg("text", { x: L, y: H - 4 }); span.textContent = "last " + fmtS((t1 - t0) / 1000) + " of site time";
    s.appendChild(span);
    box.appendChild(s);
    return box;
  }

  function draw() {
    drawQueued = false;
    var b = document.body;
    b.dataset.status = st.status;
    b.dataset.samples = String(st.samples);
    b.dataset.seq = String(st.seq);
    var status = $("status");
    status.textContent = st.status + (st.by ? " by " + st.by : "") + (st.outcome ? ": " + st.outcome : "");
    status.className = "status " + st.status;
    var c = st.case;
    $("case").textContent = c ? c.index + "/" + c.of + " " + c.id + " · " + c.title : "–";
    $("case").title = c ? "clause " + c.clause : "";
    $("step").textContent = st.step && c ? st.step.n + "/" + c.steps.length + " " + st.step.id + " (" + st.step.op + ")" : "–";
    var l = st.left;
    $("left").textContent = l ? "case ~" + fmtS(l.case_s) + ", run ~" + fmtS(l.run_s) + " (" + fmtS(l.elapsed_s) + " elapsed, site time)" : "–";
    var notes = [];
    if (st.status === "paused") { notes.push("Paused by " + st.by + ", load at 0 kW. Resume runs the case again from its first step: restore anything its manual steps changed first."); }
    if (st.status === "ended" && st.text) { notes.push(st.text); }
    if (st.dropped > 0) { notes.push("This view fell behind and missed " + st.dropped + " events (the run did not wait for it; the evidence has every sample)."); }
    $("notice").hidden = notes.length === 0;
    $("notice").textContent = notes.join(" ");
    $("controls").hidden = role !== "operator" || st.status === "ended";
    $("pause").disabled = st.status !== "running";
    $("resume").disabled = st.status !== "paused";

    var traces = $("traces");
    traces.textContent = "";
    var envs = {};
    var chans = [];
    if (c) {
      c.envelopes.forEach(function (e) {
        if (!envs[e.channel]) { envs[e.channel] = []; chans.push(e.channel); }
        envs[e.channel].push(e);
      });
    }
    Object.keys(st.traces).sort().forEach(function (ch) { if (!envs[ch]) { envs[ch] = []; chans.push(ch); } });
    chans.forEach(function (ch) { traces.appendChild(plot(ch, st.traces[ch] || [], envs[ch])); });

    var tb = $("margins").tBodies[0];
    tb.textContent = "";
    Object.keys(st.margins).sort().forEach(function (id) {
      var m = st.margins[id];
      var tr = document.createElement("tr");
      var lim = (m.min !== undefined ? "≥ " + m.min : "") + (m.min !== undefined && m.max !== undefined ? ", " : "") + (m.max !== undefined ? "≤ " + m.max : "");
      var range = (m.min !== undefined && m.max !== undefined) ? m.max - m.min : Math.abs(m.value) || 1;
      [id, m.channel, num(m.value) + " " + (m.unit || "") + (m.quality !== "good" ? " (" + m.quality + ")" : ""), lim + " " + (m.unit || ""), num(m.margin) + " " + (m.unit || "")].forEach(function (v, i) {
        var td = document.createElement("td");
        td.textContent = v;
        if (i === 4) { td.className = m.margin < 0 ? "out" : (m.margin < 0.1 * range ? "near" : ""); }
        tr.appendChild(td);
      });
      tb.appendChild(tr);
    });

    var ol = $("steps");
    ol.textContent = "";
    (c ? c.steps : []).forEach(function (s) {
      var li = document.createElement("li");
      li.textContent = s.id + " (" + s.op + ", ~" + fmtS(s.estimated_s) + ")";
      if (st.step && st.step.n === s.n) { li.className = "current"; }
      ol.appendChild(li);
    });
    var ul = $("log");
    ul.textContent = "";
    st.log.slice().reverse().forEach(function (line) {
      var li = document.createElement("li"); li.textContent = line; ul.appendChild(li);
    });
  }
  function queueDraw() {
    if (!drawQueued) { drawQueued = true; setTimeout(draw, 100); }
  }

  function ask(action) {
    var text = {
      pause: "Pause the run? The case stops at once and its load goes to 0 kW; resuming runs it again from its first step.",
      resume: "Resume the run? The stopped case runs again from its first step: restore anything its manual steps changed first.",
      abort: "Abort the run? Every load bank goes to 0 kW and the run ends (resume it later with sat run --resume)."
    }[action];
    pending = action;
    $("confirm-text").textContent = text;
    $("confirm-yes").textContent = "Confirm " + action;
    $("confirm").hidden = false;
  }
  function send(action) {
    $("confirm").hidden = true;
    $("answer").textContent = action + ": sent…";
    fetch("/api/" + action, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Seam-Token": token },
      body: JSON.stringify({ confirmed: true }),
      credentials: "omit"
    }).then(function (r) { return r.json(); }).then(function (a) {
      $("answer").textContent = a.ok ? action + ": done by " + a.by : action + " refused: " + a.error;
    }).catch(function (e) { $("answer").textContent = action + ": " + e; });
  }

  function connect() {
    var es = new EventSource("/events?token=" + encodeURIComponent(token));
    es.onmessage = function (m) {
      var ev = JSON.parse(m.data);
      if (ev.kind === "hello") {
        role = ev.role;
        st = ev.state;
        $("who").textContent = ev.name + " (" + ev.role + ")";
      } else if (st) {
        apply(ev);
      }
      queueDraw();
    };
    es.onerror = function () {
      if (st && st.status === "ended") { es.close(); return; }
      var s = $("status");
      s.textContent = "connection lost: reconnecting…";
      s.className = "status lost";
      document.body.dataset.status = "lost";
    };
  }

  document.addEventListener("DOMContentLoaded", function () {
    readToken();
    ["pause", "resume", "abort"].forEach(function (a) { $(a).addEventListener("click", function () { ask(a); }); });
    $("confirm-yes").addEventListener("click", function () { send(pending); });
    $("confirm-no").addEventListener("click", function () { $("confirm").hidden = true; pending = ""; });
    if (!token) {
      $("status").textContent = "no token: open the address sat run printed (it ends in #token=…)";
      return;
    }
    connect();
  });
})();
