/* The labelling page of freshrag's HTML report (harness/reporting/render/labelling.py says what
   the data holds; docs/reports.md#labelling-answers the labels file it saves). Every value
   reaches the page as text (textContent), never as markup. Labels live in localStorage under the
   page's own id and the labeller's name, so a reload keeps them and two pages never mix. Every
   documented key works wherever the focus is but in a text field (there Esc leaves it), the
   focus goes to the answer whenever labelling starts, and a score changed is said aloud. */
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("label-data").textContent);
  const ITEMS = data.items, SCALE = [1, 2, 3, 4, 5];
  const NAME_KEY = "freshrag-labeller";  // typed once, for every page
  const RELEVANCE_KEYS = ["KeyQ", "KeyW", "KeyE", "KeyR", "KeyT"];  // the row under 1 to 5
  const $ = function (id) { return document.getElementById(id); };
  let name = null, labels = {}, pos = 0, storageBroken = false, unsaved = false;

  // ------------------------------------------------------------------ storage

  function storeKey() { return "freshrag-labels:" + data.report + ":" + name; }
  function posKey() { return "freshrag-labels-at:" + data.report + ":" + name; }
  function load(key) {
    try { return window.localStorage.getItem(key); } catch (e) { return null; }
  }
  function store(key, value) {
    try {
      window.localStorage.setItem(key, value);
    } catch (e) {  // storage off or full: say so once, so that the labeller saves by download
      if (!storageBroken) $("label-saved").textContent = "This browser does not keep labels " +
        "across reloads (" + e.name + "): save them with S before closing the page.";
      storageBroken = true;
    }
  }
  function persist() {
    store(storeKey(), JSON.stringify(labels));
    store(posKey(), String(pos));
  }
  // an answer as the page shows it (not its key, which the page's salt changes when it is made
  // again), so that labels kept in the browser survive a page made again
  function ident(item) {
    return item.dataset + "\n" + item.question_id + "\n" + item.answer_sha256;
  }
  function complete(label) {
    return !!label && SCALE.indexOf(label.truthfulness) >= 0 &&
      SCALE.indexOf(label.relevance) >= 0;
  }
  function done() {
    return ITEMS.filter(function (item) { return complete(labels[ident(item)]); }).length;
  }
  function now() { return new Date().toISOString().replace(/\.\d+Z$/, "Z"); }

  // ------------------------------------------------------------------ the labeller

  function start(who) {
    name = who;
    store(NAME_KEY, name);
    let saved = {};
    try { saved = JSON.parse(load(storeKey()) || "{}") || {}; } catch (e) { saved = {}; }
    labels = typeof saved === "object" && !Array.isArray(saved) ? saved : {};
    const at = parseInt(load(posKey()), 10);
    pos = at >= 0 && at < ITEMS.length ? at : firstOpen(0);
    $("label-whoami").textContent = "Labelling as " + name + ".";
    $("label-start").textContent = "Change name";
    $("label-name").value = name;
    if (!ITEMS.length) { $("label-whoami").textContent += " This page has no answers to label."; return; }
    $("label-card").hidden = false;
    render();
    toAnswer();
  }
  // the keys act on the answer shown: the focus goes to it, off the button that started
  function toAnswer() {
    $("label-answer").focus({preventScroll: true});
    $("label-card").scrollIntoView({block: "nearest"});
  }
  function say(text) { $("label-said").textContent = text; }
  function firstOpen(from) {
    for (let i = 0; i < ITEMS.length; i++) {
      const at = (from + i) % ITEMS.length;
      if (!complete(labels[ident(ITEMS[at])])) return at;
    }
    return from;
  }

  // ------------------------------------------------------------------ one answer

  function scoreButtons(field) {
    const box = $("label-" + field);
    SCALE.forEach(function (score) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = String(score);
      button.dataset.score = String(score);
      button.addEventListener("click", function () { setScore(field, score); });
      box.append(button);
    });
  }
  function render() {
    const item = ITEMS[pos], label = labels[ident(item)] || {};
    $("label-position").textContent = "Answer " + (pos + 1) + " of " + ITEMS.length;
    $("label-progress").textContent = done() + " of " + ITEMS.length + " labelled";
    $("label-seed").textContent = String(data.seed);
    $("label-question").textContent = item.question;
    $("label-reference-box").hidden = item.reference === null || item.reference === undefined;
    $("label-reference").textContent = item.reference || "";
    $("label-golds").textContent = item.gold_titles.length ? item.gold_titles.join(" · ")
      : "none (a general query: grade by what you know)";
    $("label-passage-box").hidden = item.passage === null;
    $("label-passage").textContent = item.passage === null ? "" : data.passages[item.passage];
    $("label-answer").textContent = item.answer;
    ["truthfulness", "relevance"].forEach(function (field) {
      $("label-" + field).querySelectorAll("button").forEach(function (button) {
        button.setAttribute("aria-pressed",
          String(Number(button.dataset.score) === label[field]));
      });
    });
    $("label-note").value = label.note || "";
  }
  function update(change, quiet) {
    const id = ident(ITEMS[pos]);
    labels[id] = Object.assign({}, labels[id] || {note: ""}, change, {labelled_at: now()});
    unsaved = true;
    persist();
    if (!quiet) render();  // a note being typed is not redrawn under the caret
  }
  function setScore(field, score) {
    const was = (labels[ident(ITEMS[pos])] || {})[field];
    if (was === score) return;
    const change = {};
    change[field] = score;
    update(change);
    // a grade given before is replaced only in plain sight: the line says what changed
    say(SCALE.indexOf(was) >= 0 ? "Answer " + (pos + 1) + ": " + field + " changed from " + was +
      " to " + score + "." : "");
    $("label-card").scrollIntoView({block: "nearest"});
  }
  function go(to) {
    const next = Math.max(0, Math.min(ITEMS.length - 1, to));
    say(next === pos && to !== pos ? (to > pos ? "This is the last answer" : "This is the first " +
      "answer") + "; " + (ITEMS.length - done()) + " not labelled yet (U finds them)." : "");
    pos = next;
    persist();
    render();
  }

  // ------------------------------------------------------------------ saving

  function lines() {
    return ITEMS.filter(function (item) { return complete(labels[ident(item)]); })
      .map(function (item) {
        const label = labels[ident(item)];
        return JSON.stringify({
          freshrag_labels: data.format, key: item.key, dataset: item.dataset,
          question_id: item.question_id, answer_sha256: item.answer_sha256,
          truthfulness: label.truthfulness, relevance: label.relevance,
          note: label.note || "", labeller: name, labelled_at: label.labelled_at,
          seed: data.seed, salt: data.salt}) + "\n";
      });
  }
  function save() {
    const out = lines(), open = ITEMS.length - out.length;
    const blob = new Blob(out, {type: "application/x-ndjson"});
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = "labels-" + name.replace(/[^A-Za-z0-9_.-]+/g, "_") + "-" + data.report +
      ".jsonl";
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(function () { URL.revokeObjectURL(link.href); }, 1000);
    unsaved = false;
    $("label-saved").textContent = "Saved " + counted(out.length, "label") + " as " +
      link.download + "; " + (open ? open + " of " + counted(ITEMS.length, "answer") +
      " not labelled yet (a label needs both scores)." : "every answer labelled.");
  }
  // leaving with answers unlabelled or labels not downloaded asks first (the browser's dialog)
  function beforeLeaving(event) {
    if (!name || !ITEMS.length || (!unsaved && done() === ITEMS.length)) return;
    event.preventDefault();
    event.returnValue = "";
  }

  // ------------------------------------------------------------------ keys

  function digit(code) {
    const match = /^(?:Digit|Numpad)([1-5])$/.exec(code);
    return match ? Number(match[1]) : null;
  }
  function onKey(event) {
    const target = event.target;
    if (target.tagName === "TEXTAREA" || target.tagName === "INPUT") {
      if (event.key === "Escape" && !$("label-card").hidden) toAnswer();
      return;  // text is typed there; Enter in the name starts (the form's submit)
    }
    if ($("label-card").hidden || event.ctrlKey || event.metaKey || event.altKey) return;
    // on a focused button too: Enter is "next", never that button's click again
    const score = digit(event.code), row = RELEVANCE_KEYS.indexOf(event.code);
    if (score !== null) setScore(event.shiftKey ? "relevance" : "truthfulness", score);
    else if (row >= 0) setScore("relevance", row + 1);
    else if (event.key === "ArrowRight" || event.key === "Enter") go(pos + 1);
    else if (event.key === "ArrowLeft") go(pos - 1);
    else if (event.code === "KeyU") go(firstOpen(pos + 1));
    else if (event.code === "KeyN") $("label-note").focus();
    else if (event.key === "Escape") toAnswer();
    else if (event.code === "KeyS") save();
    else return;
    event.preventDefault();
  }

  // ------------------------------------------------------------------ wiring

  scoreButtons("truthfulness");
  scoreButtons("relevance");
  $("label-who").addEventListener("submit", function (event) {
    event.preventDefault();
    const typed = $("label-name").value.trim();
    if (typed) start(typed);
  });
  $("label-note").addEventListener("input", function () {
    update({note: $("label-note").value}, true);
  });
  $("label-prev").addEventListener("click", function () { go(pos - 1); });
  $("label-next").addEventListener("click", function () { go(pos + 1); });
  $("label-skip").addEventListener("click", function () { go(firstOpen(pos + 1)); });
  $("label-save").addEventListener("click", save);
  document.addEventListener("keydown", onKey);
  window.addEventListener("beforeunload", beforeLeaving);
  const known = load(NAME_KEY);
  if (known && known.trim()) start(known.trim());
  else $("label-name").focus();
})();
