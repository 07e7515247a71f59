/* The sample viewer of freshrag's HTML report (harness/reporting/render/viewer.py says what the
   data holds). Every value reaches the page as text (textContent, text nodes), never as markup.
   The list is virtual: only the rows in sight exist; a block of records is parsed when one of
   its answers is opened. */
(function () {
  "use strict";
  const ROW_H = 28;
  const data = JSON.parse(document.getElementById("viewer-data").textContent);
  const C = {};
  data.columns.forEach(function (name, i) { C[name] = i; });
  const S = data.samples, Q = data.questions, SYSTEMS = data.systems;
  const byQuestion = new Map();  // question index -> sample indices
  const spread = new Array(Q.length).fill(null);  // largest difference between two scores
  S.forEach(function (s, i) {
    const q = s[C.question];
    if (!byQuestion.has(q)) byQuestion.set(q, []);
    byQuestion.get(q).push(i);
  });
  byQuestion.forEach(function (members, q) {
    const scores = members.map(function (i) { return S[i][C.score]; })
      .filter(function (v) { return v !== null; });
    if (scores.length > 1) spread[q] = Math.max.apply(null, scores) - Math.min.apply(null, scores);
  });
  const $ = function (id) { return document.getElementById(id); };
  const rowsBox = $("viewer-rows"), spacer = $("viewer-spacer");
  let view = [], sortKey = null, sortDir = 1, opened = null;
  const blocks = new Map();

  // ------------------------------------------------------------------ building elements

  function el(tag, cls) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    for (let i = 2; i < arguments.length; i++) {
      const kid = arguments[i];
      if (kid === null || kid === undefined || kid === false) continue;
      node.append(kid instanceof Node ? kid : String(kid));
    }
    return node;
  }
  function pre(text) { return el("pre", null, text === null || text === undefined ? "" : text); }
  function fmt(v) { return v === null || v === undefined ? "–" : String(v); }
  function num(v) { return typeof v === "number" ? v.toLocaleString("en") : fmt(v); }
  function pretty(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
  }

  // ------------------------------------------------------------------ the list

  function fillSelect(id, values) {
    const select = $(id);
    values.forEach(function (v) { select.append(new Option(v, v)); });
  }
  function distinct(values) {
    return Array.from(new Set(values.filter(function (v) { return v !== null; }))).sort();
  }
  fillSelect("f-system", SYSTEMS);
  fillSelect("f-label", distinct(Q.map(function (q) { return q[4]; })));
  fillSelect("f-kind", distinct(Q.map(function (q) { return q[5]; })));
  fillSelect("f-decision", distinct(S.map(function (s) { return s[C.decision]; })));

  function filters() {
    const bound = function (id) { const v = $(id).value; return v === "" ? null : Number(v); };
    const f = {search: $("f-search").value.trim().toLowerCase(), system: $("f-system").value,
               label: $("f-label").value, kind: $("f-kind").value,
               decision: $("f-decision").value, status: $("f-status").value,
               min: bound("f-min"), max: bound("f-max"), disagree: Number($("f-disagree").value)};
    FACETS.forEach(function (name) { f[name] = $("f-" + name).value; });
    return f;
  }
  // The filters on the steps: each answer falls in one option of each (or in none, e.g. an
  // answer with no gold set has no hops); every option counts the answers it would show.
  const FACETS = ["stopped", "wasted", "hops"];
  const facetOf = {
    stopped: function (s) { return given(s[C.stopped]) ? s[C.stopped] : "no"; },
    wasted: function (s) {  // null: no steps, no gold set, or not every gold article found
      const n = s[C.wasted];
      return given(n) ? (n > 0 ? "some" : "none") : null;
    },
    hops: function (s) {
      const n = Q[s[C.question]][6];
      return n >= 2 ? "2+" : (n === 1 ? "1" : null);
    }};
  FACETS.forEach(function (name) {
    Array.from($("f-" + name).options).forEach(function (o) { o.dataset.label = o.text; });
  });
  function facetCounts(counts) {
    FACETS.forEach(function (name) {
      Array.from($("f-" + name).options).forEach(function (o) {
        const n = o.value === "" ? counts[name].any : counts[name][o.value] || 0;
        o.text = o.dataset.label + " (" + n.toLocaleString("en") + ")";
      });
    });
  }
  function keep(s, f) {
    const q = Q[s[C.question]];
    if (f.system && SYSTEMS[s[C.system]] !== f.system) return false;
    if (f.label && q[4] !== f.label) return false;
    if (f.kind && q[5] !== f.kind) return false;
    if (f.decision && s[C.decision] !== f.decision) return false;
    if (f.status && s[C.status] !== f.status) return false;
    if ((f.min !== null || f.max !== null) && s[C.score] === null) return false;
    if (f.min !== null && s[C.score] < f.min) return false;
    if (f.max !== null && s[C.score] > f.max) return false;
    if (f.disagree > 0 && !(spread[s[C.question]] >= f.disagree)) return false;
    if (f.search) {
      const text = (q[0] + "/" + q[1] + " " + (q[2] || "") + " " + SYSTEMS[s[C.system]] + " "
                    + s[C.answer]).toLowerCase();
      if (text.indexOf(f.search) < 0) return false;
    }
    return true;
  }
  function sortValue(i) {
    const s = S[i];
    switch (sortKey) {
      case "system": return SYSTEMS[s[C.system]];
      case "spread": return spread[s[C.question]];
      case "question": return s[C.question];
      default: return s[C[sortKey]];
    }
  }
  function apply() {
    const f = filters();
    const counts = {};
    FACETS.forEach(function (name) { counts[name] = {any: 0}; });
    view = [];
    const at = FACETS.map(function () { return null; });
    for (let i = 0; i < S.length; i++) {
      if (!keep(S[i], f)) continue;
      let misses = 0, missed = -1;
      for (let k = 0; k < FACETS.length; k++) {
        at[k] = facetOf[FACETS[k]](S[i]);
        if (f[FACETS[k]] && at[k] !== f[FACETS[k]]) { misses++; missed = k; }
      }
      if (!misses) view.push(i);
      for (let k = 0; k < FACETS.length && misses < 2; k++) {
        if (misses && missed !== k) continue;  // a facet counts what it would show, others set
        const facet = counts[FACETS[k]];
        facet.any++;
        if (at[k] !== null) facet[at[k]] = (facet[at[k]] || 0) + 1;
      }
    }
    facetCounts(counts);
    if (sortKey) {
      const keyed = view.map(function (i) { return [sortValue(i), i]; });
      keyed.sort(function (a, b) {  // missing values last either way; ties in report order
        if (a[0] === b[0]) return a[1] - b[1];
        if (a[0] === null || a[0] === undefined) return 1;
        if (b[0] === null || b[0] === undefined) return -1;
        return (a[0] < b[0] ? -1 : 1) * sortDir;
      });
      view = keyed.map(function (pair) { return pair[1]; });
    }
    $("viewer-count").textContent = view.length.toLocaleString("en") + " of "
      + counted(S.length, "answer");
    spacer.style.height = (view.length * ROW_H) + "px";
    rowsBox.scrollTop = 0;
    paint();
  }
  function listRow(i, position) {
    const s = S[i], q = Q[s[C.question]];
    const row = el("div", "vrow" + (i === opened ? " open" : ""),
      el("span", null, q[0] + "/" + q[1] + " " + (q[2] || "")),
      el("span", null, SYSTEMS[s[C.system]]),
      el("span", "st-" + s[C.status], s[C.status]),
      el("span", "num", fmt(s[C.score])),
      el("span", "num", fmt(spread[s[C.question]])),
      el("span", null, fmt(s[C.decision])),
      el("span", "num", num(s[C.input_tokens])),
      el("span", "num", num(s[C.output_tokens])),
      el("span", "num", fmt(s[C.latency_s])),
      el("span", "num", fmt(s[C.retrievals])));
    row.style.top = (position * ROW_H) + "px";
    row.dataset.i = i;
    row.dataset.system = SYSTEMS[s[C.system]];
    row.dataset.status = s[C.status];
    row.dataset.score = fmt(s[C.score]);
    row.title = q[2] || "";
    row.tabIndex = 0;  // Enter opens it
    return row;
  }
  function paint() {
    const first = Math.max(0, Math.floor(rowsBox.scrollTop / ROW_H) - 5);
    const last = Math.min(view.length, Math.ceil((rowsBox.scrollTop + rowsBox.clientHeight)
                                                 / ROW_H) + 5);
    const rows = [];
    for (let p = first; p < last; p++) rows.push(listRow(view[p], p));
    spacer.replaceChildren.apply(spacer, rows);
  }
  let pending = false;
  rowsBox.addEventListener("scroll", function () {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; paint(); });
  });
  $("viewer-filters").addEventListener("input", apply);
  $("viewer-filters").addEventListener("submit", function (e) { e.preventDefault(); });
  $("viewer-filters").addEventListener("reset", function () { setTimeout(apply, 0); });
  $("viewer-head").addEventListener("click", function (e) {
    const button = e.target.closest("button");
    if (!button) return;
    const key = button.dataset.sort;
    sortDir = sortKey === key ? -sortDir : 1;
    sortKey = key;
    document.querySelectorAll("#viewer-head button").forEach(function (b) {
      b.removeAttribute("aria-sort");
    });
    button.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
    apply();
  });
  spacer.addEventListener("click", function (e) {
    const row = e.target.closest(".vrow");
    if (row) open(Number(row.dataset.i));
  });
  spacer.addEventListener("keydown", function (e) {
    const row = e.target.closest(".vrow");
    if (!row || (e.key !== "Enter" && e.key !== " ")) return;
    e.preventDefault();
    open(Number(row.dataset.i));
    $("viewer-close").focus();  // the row is drawn again: keep the focus in the answer
  });

  // ------------------------------------------------------------------ one answer

  function record(i) {
    const n = S[i][C.block];
    if (!blocks.has(n)) {
      const element = $("viewer-block-" + n);
      if (!element) return null;  // the browser is still reading the page
      blocks.set(n, JSON.parse(element.textContent));
    }
    const block = blocks.get(n);
    const resolve = function (v) {
      if (typeof v === "string") {
        if (v.charCodeAt(0) !== 0) return v;
        return v.charCodeAt(1) === 0 ? v.slice(1) : block.strings[Number(v.slice(1))];
      }
      if (Array.isArray(v)) return v.map(resolve);
      if (v && typeof v === "object") {
        const out = {};
        Object.keys(v).forEach(function (k) { out[k] = resolve(v[k]); });
        return out;
      }
      return v;
    };
    return resolve(block.samples[S[i][C.slot]]);
  }
  function facts(pairs) {
    const dl = el("dl", "viewer-facts");
    pairs.forEach(function (p) {
      if (p[1] !== null && p[1] !== undefined && p[1] !== "") dl.append(el("dt", null, p[0]),
                                                                      el("dd", null, p[1]));
    });
    return dl;
  }
  function section(title) {
    const box = el("div", "viewer-part");
    box.append(el("h4", null, title));
    for (let i = 1; i < arguments.length; i++) if (arguments[i]) box.append(arguments[i]);
    return box;
  }
  function verdict(s, r) {
    const grade = r.grade || {};
    if (s[C.status] === "failed") return "failed: " + (r.error || "no reason recorded");
    if (s[C.status] === "unscored") return "unscored: " + (grade.unscored_reason || "no grade");
    return "truthfulness " + grade.truthfulness + " · relevance " + grade.relevance;
  }
  // every gold article's title: a multi-article question's gold_titles, else its one title
  function golds(r) {
    if (Array.isArray(r.gold_titles) && r.gold_titles.length) return r.gold_titles;
    return given(r.gold_title) ? [r.gold_title] : [];
  }
  function chunks(r) {
    const retrieved = (r.details || {}).retrieved;
    if (!retrieved || !retrieved.length) return el("p", "muted", "nothing retrieved");
    const table = el("table", "viewer-chunks",
      el("thead", null, el("tr", null, el("th", null, "rank"), el("th", null, "title"),
                           el("th", null, "score"), el("th", null, "text"))));
    table.querySelector("thead th:last-child").style.width = "55%";
    const body = el("tbody");
    retrieved.forEach(function (c, k) {
      c = typeof c === "object" && c !== null ? c : {title: c};
      const text = c.text !== undefined ? c.text : (c.content !== undefined ? c.content : null);
      const tr = el("tr", golds(r).indexOf(c.title) >= 0 ? "gold" : null, el("td", null, k + 1),
                    el("td", null, c.title), el("td", "num", fmt(c.score)),
                    el("td", text === null ? "muted" : "text",
                       text === null ? "not recorded (the answer prompt holds it)" : text));
      body.append(tr);
    });
    table.append(body);
    return table;
  }
  function call(c, k, passage) {
    const u = c.usage || {};
    const head = (k + 1) + ". " + c.role + " · " + fmt(c.model) + " · " + num(u.input) + " in / "
      + num(u.output) + " out" + (u.estimated ? " (estimated)" : "") + " · "
      + fmt(c.latency_s) + " s" + (c.cache_hit ? " · cache hit" : "")
      + (c.batch ? " · batch" : "");
    const box = el("details", "viewer-call" + (c.role === "judge" ? " by-judge" : ""),
                   el("summary", null, head));
    (c.messages || []).forEach(function (m) {
      let content = typeof m.content === "string" ? m.content : JSON.stringify(m.content, null, 2);
      if (m.with_passage) content += data.article_mark + passage;  // the passage, stored once
      box.append(el("div", "viewer-message", el("b", null, m.role || "message"), pre(content)));
    });
    if (c.tool_name) {
      box.append(el("div", "viewer-message", el("b", null, "tool call: " + c.tool_name),
                    pre(pretty(c.tool_arguments || ""))));
    } else {
      box.append(el("div", "viewer-message", el("b", null, "reply"), pre(c.text)));
    }
    return box;
  }
  function scorers(r) {
    const scores = r.scores || {};
    const names = Object.keys(scores);
    if (!names.length) return null;
    const body = el("tbody");
    names.forEach(function (name) {
      const s = scores[name];
      const metrics = Object.keys(s.metrics || {}).map(function (m) {
        return m + " " + s.metrics[m];
      }).join(", ");
      const reason = (s.details || {}).reason || s.reason || "";  // a judge pass: details.reason
      const usage = Object.values(s.usage || {});
      const total = function (kind) {
        return num(usage.reduce(function (n, u) { return n + u[kind]; }, 0));
      };
      const tokens = usage.length ? total("input") + " in / " + total("output") + " out" : "–";
      body.append(el("tr", null, el("td", null, name), el("td", null, s.status),
                     el("td", null, metrics || "–"), el("td", null, tokens),
                     el("td", "text", reason)));
    });
    return el("table", "viewer-chunks", el("thead", null, el("tr", null,
      el("th", null, "scorer"), el("th", null, "status"), el("th", null, "metrics"),
      el("th", null, "tokens"), el("th", null, "reason"))), body);
  }
  // ------------------------------------------------------------------ the steps

  const STOPPED = {max_steps: "stopped at its most steps (max_steps)",
                   budget: "stopped when its token budget was spent (budget)"};
  function stoppedText(reason) {
    return given(reason) ? (STOPPED[reason] || "stopped: " + reason) : null;
  }
  function stepCost(st) {
    const used = Object.values(st.usage || {});
    const total = function (kind) {
      return used.reduce(function (n, u) { return n + (u[kind] || 0); }, 0);
    };
    const tokens = used.length ? num(total("input")) + " in / " + num(total("output")) + " out"
      + (used.some(function (u) { return u.estimated; }) ? " (estimated)" : "") : "no tokens";
    return tokens + " · " + fmt(st.latency_s) + " s";
  }
  // the gold articles step k (from 0) found first: r.gold_found holds each one's step number
  function firstAt(r, k) {
    const first = r.gold_found || {};
    return golds(r).filter(function (t) { return first[t] === k + 1; });
  }
  function found(retrieved, gold, firsts) {
    if (!retrieved || !retrieved.length) return el("p", "muted", "nothing found");
    const list = el("ol", "viewer-step-found");
    const marked = new Set();  // an article's first chunk in the step is the one marked first
    retrieved.forEach(function (c) {
      const first = firsts.indexOf(c.title) >= 0 && !marked.has(c.title);
      if (first) marked.add(c.title);
      list.append(el("li", gold.indexOf(c.title) >= 0 ? "gold" + (first ? " first" : "") : null,
                     el("span", "title", c.title), el("span", "num score", fmt(c.score)),
                     first ? el("span", "flag-gold", "gold, first found") : null));
    });
    return list;
  }
  function step(st, k, r) {
    const firsts = firstAt(r, k);
    const item = el("li", "viewer-step step-" + st.kind + (st.repeated ? " repeated" : "")
                    + (firsts.length ? " gold-first" : ""),
      el("div", "viewer-step-head", el("b", "kind", (k + 1) + ". " + st.kind),
         el("span", "cost", stepCost(st)),
         st.repeated ? el("span", "flag", "repeated search") : null,
         firsts.length ? el("span", "flag-gold", "gold found: " + firsts.join(", ")) : null));
    item.dataset.kind = st.kind;
    if (st.kind === "search") {
      item.append(el("div", "viewer-step-query", el("span", "muted", "query "), fmt(st.query)),
                  found(st.retrieved, golds(r), firsts));
    }
    if (given(st.title)) item.append(el("div", "viewer-step-read", el("span", "muted", "read "),
                                        st.title));
    if (given(st.text)) item.append(el("div", "text viewer-step-text", st.text));
    return item;
  }
  function stepsOf(r) { return Array.isArray(r.steps) ? r.steps : []; }
  // "gold found: A (step 2), B (step 4); not found: C", and the steps wasted after the last
  function goldLine(s, r) {
    const gold = golds(r), first = r.gold_found || {};
    if (!gold.length || !stepsOf(r).length) return null;
    const hit = gold.filter(function (t) { return given(first[t]); });
    const missed = gold.filter(function (t) { return !given(first[t]); });
    const wasted = s[C.wasted];
    return el("p", "viewer-gold-found", "gold found: " + (hit.length ? hit.map(function (t) {
      return t + " (step " + first[t] + ")";
    }).join(", ") : "none") + (missed.length ? "; not found: " + missed.join(", ") : "")
      + (given(wasted) ? "; " + counted(wasted, "step") + " after all gold was found" : ""));
  }
  function timeline(s, r) {
    const steps = stepsOf(r);
    if (!steps.length) return null;  // a row from before steps, or a system that gave none
    const searches = steps.filter(function (st) { return st.kind === "search"; });
    const repeated = searches.filter(function (st) { return st.repeated; }).length;
    const list = el("ol", "viewer-steps");
    steps.forEach(function (st, k) { list.append(step(st, k, r)); });
    return section("Steps (" + steps.length + "; " + counted(searches.length, "search", "searches")
                   + (repeated ? ", " + repeated + " repeated" : "") + ")", goldLine(s, r), list,
                   given(r.stopped) ? el("p", "viewer-stopped", stoppedText(r.stopped)) : null);
  }
  const SHOWN = ["decision", "decision_raw", "first_answer", "retrieved", "context"];
  function overview(s, q, r) {
    const fields = r.question_fields || {};
    const latency = s[C.latency_s] === null && !r.latency_s ? null
      : fmt(s[C.latency_s]) + " s (answer), " + fmt(r.latency_s) + " s (pair, judge included)";
    return facts([[golds(r).length > 1 ? "gold titles" : "gold title",
                   q[3] || "none (a general query)"]]
      .concat(Object.keys(fields).map(function (k) { return [k, fields[k]]; }))
      .concat([["models", r.models ? JSON.stringify(r.models) : null],
               ["grade", verdict(s, r)],
               ["system tokens", num(s[C.input_tokens]) + " in / " + num(s[C.output_tokens])
                + " out"],
               ["latency", latency], ["retrievals", fmt(r.retrievals)],
               ["decision", (r.details || {}).decision], ["stopped", stoppedText(r.stopped)],
               ["run", r.run]]));
  }
  function given(value) { return value !== undefined && value !== null; }
  function transcript(i) {
    const s = S[i], q = Q[s[C.question]], r = record(i);
    if (r === null) {
      return el("p", "muted", "Still loading this answer: open it again in a moment.");
    }
    const details = r.details || {}, grade = r.grade || {};
    const box = el("div", "viewer-transcript",
                   el("h3", null, SYSTEMS[s[C.system]] + " · " + q[0] + " / " + q[1]),
                   el("p", "viewer-question", q[2]), overview(s, q, r));
    box.dataset.i = i;
    if (grade.reason) box.append(section("Judge's reason", el("p", "viewer-reason", grade.reason)));
    box.append(section("Answer", given(r.answer) ? el("div", "text viewer-answer", r.answer)
                                                 : el("p", "muted", "(no answer)")));
    const steps = timeline(s, r);
    if (steps) box.append(steps);
    if (given(details.first_answer)) {
      box.append(section("First answer (before deciding)",
                         el("div", "text", details.first_answer)));
    }
    if (given(details.decision_raw)) {
      box.append(section("Decision reply", pre(pretty(String(details.decision_raw)))));
    }
    box.append(section("Retrieved chunks", chunks(r),
      typeof details.context === "string" ? el("div", null, el("b", null, "context as reported"),
                                                 pre(details.context)) : null));
    box.append(section("Gold passage", r.gold_passage
      ? el("details", null, el("summary", null, (q[3] || "article") + " ("
                               + r.gold_passage.length.toLocaleString("en") + " characters)"),
           pre(r.gold_passage))
      : el("p", "muted", "not in this record (no judge prompt with the article)")));
    const calls = r.calls || [];
    const listed = section("Calls (" + calls.length + ")",
                           calls.length ? null : el("p", "muted", "no calls recorded"));
    calls.forEach(function (c, k) { listed.append(call(c, k, r.gold_passage)); });
    box.append(listed);
    const raw = grade.raw || [];
    if (raw.length) {
      const outputs = el("div");
      raw.forEach(function (x) { outputs.append(pre(x === null ? "(no tool call)" : x)); });
      box.append(section("Judge output (" + raw.length + " attempts)", outputs));
    }
    box.append(section("Scorers", scorers(r) || el("p", "muted", "no scorer ran on it")));
    const rest = {};
    Object.keys(details).forEach(function (k) { if (SHOWN.indexOf(k) < 0) rest[k] = details[k]; });
    if (Object.keys(rest).length) {
      box.append(section("Other details", pre(JSON.stringify(rest, null, 2))));
    }
    if (r.error) box.append(section("Error", pre(r.error)));
    return box;
  }
  function open(i) {
    opened = i;
    const pane = $("viewer-detail");
    const others = byQuestion.get(S[i][C.question]).filter(function (j) { return j !== i; });
    const bar = el("div", "viewer-bar", el("button", null, "Close"));
    bar.firstChild.type = "button";
    bar.firstChild.id = "viewer-close";
    bar.firstChild.addEventListener("click", function () {
      pane.hidden = true; $("viewer-compare").hidden = true; $("viewer-trajectories").hidden = true;
      opened = null; paint();
    });
    if (others.length) {
      const select = el("select");
      select.id = "viewer-compare-with";
      select.append(new Option("another answer to this question…", ""));
      others.forEach(function (j) { select.append(new Option(SYSTEMS[S[j][C.system]], j)); });
      select.addEventListener("change", function () {
        if (select.value !== "") compare(i, Number(select.value));
      });
      bar.append(el("label", null, "Compare with ", select));
      const side = el("button", null, "Steps side by side");
      side.type = "button";
      side.id = "viewer-trajectories-open";
      side.addEventListener("click", function () {
        trajectories(i, others[0]);
        $("viewer-traj-a").focus();
      });
      bar.append(side);
    }
    pane.replaceChildren(bar, transcript(i));
    pane.hidden = false;
    $("viewer-compare").hidden = true;
    $("viewer-trajectories").hidden = true;
    paint();
    pane.scrollIntoView({block: "start"});
  }
  function compare(a, b) {
    const pane = $("viewer-compare"), detail = $("viewer-detail");
    pane.replaceChildren(el("div", "viewer-side", transcript(a)),
                         el("div", "viewer-side", transcript(b)));
    pane.hidden = false;
    // The open answer gives way to the two, right under the bar that chose them: the view
    // stays at the bar and both answers come into it, instead of below a long transcript.
    const single = detail.hidden || opened !== a ? null : detail.children[1];
    if (single) single.hidden = true;
    (single ? detail : pane).scrollIntoView({block: "start"});
  }
  // ------------------------------------------------------------------ steps side by side

  function sideFacts(i, r) {
    const s = S[i];
    return [["answer", given(r.answer) ? el("div", "text viewer-answer", r.answer)
                                       : el("span", "muted", "(no answer)")],
            ["grade", verdict(s, r)],
            ["tokens", num(s[C.input_tokens]) + " in / " + num(s[C.output_tokens]) + " out"],
            ["stopped", stoppedText(r.stopped) || "no"],
            ["gold", goldLine(s, r) || el("span", "muted", "–")]];
  }
  function stepCell(r, k) {
    const steps = stepsOf(r);
    if (!steps.length) return el("td", "viewer-traj-none", k === 0 ? "no steps recorded" : null);
    if (k >= steps.length) return el("td", "viewer-traj-none");
    const cell = el("td", null, el("ol", "viewer-steps", step(steps[k], k, r)));
    cell.dataset.kind = steps[k].kind;
    return cell;
  }
  function header(text, scope) {
    const th = el("th", null, text);
    th.scope = scope;
    return th;
  }
  // two answers to one question, one column each, a row per step number
  function trajectoryTable(a, b) {
    const ra = record(a), rb = record(b);
    if (ra === null || rb === null) {
      return el("p", "muted", "Still loading these answers: choose them again in a moment.");
    }
    const q = Q[S[a][C.question]];
    const facts = el("tbody", "viewer-traj-facts"), steps = el("tbody", "viewer-traj-steps");
    const fa = sideFacts(a, ra), fb = sideFacts(b, rb);
    fa.forEach(function (pair, k) {
      facts.append(el("tr", null, header(pair[0], "row"), el("td", null, pair[1]),
                      el("td", null, fb[k][1])));
    });
    const n = Math.max(stepsOf(ra).length, stepsOf(rb).length, 1);
    for (let k = 0; k < n; k++) {
      steps.append(el("tr", null, header(String(k + 1), "row"), stepCell(ra, k), stepCell(rb, k)));
    }
    return el("table", "viewer-traj-table",
              el("caption", null, "The steps of two answers to " + q[0] + " / " + q[1]
                 + ", side by side by step number"),
              el("thead", null, el("tr", null, header("step", "col"),
                                   header(SYSTEMS[S[a][C.system]], "col"),
                                   header(SYSTEMS[S[b][C.system]], "col"))), facts, steps);
  }
  function trajectories(a, b) {
    const pane = $("viewer-trajectories"), q = Q[S[a][C.question]];
    const choose = function (id, chosen) {
      const select = el("select");
      select.id = id;
      byQuestion.get(S[a][C.question]).forEach(function (j) {
        select.append(new Option(SYSTEMS[S[j][C.system]], j, false, j === chosen));
      });
      return select;
    };
    const left = choose("viewer-traj-a", a), right = choose("viewer-traj-b", b);
    const body = el("div", "viewer-traj-body", trajectoryTable(a, b));
    const redraw = function () {
      body.replaceChildren(trajectoryTable(Number(left.value), Number(right.value)));
    };
    left.addEventListener("change", redraw);
    right.addEventListener("change", redraw);
    pane.replaceChildren(el("h3", null, "Steps side by side · " + q[0] + " / " + q[1]),
                         el("p", "viewer-question", q[2]),
                         el("div", "viewer-bar", el("label", null, "Left ", left),
                            el("label", null, "Right ", right)), body);
    pane.hidden = false;
    pane.scrollIntoView({block: "start"});
    return pane;
  }
  window.freshragViewer = {open: open, compare: compare, trajectories: trajectories,
                           apply: apply};
  apply();
})();
