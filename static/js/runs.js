// Agent runs: folder uploads keep their relative paths; keyboard answers on a run's page. A
// stale answer (409) or a second rescore comes back with what to show: data-swap-errors on the
// checks, the rescore box and the job card lets app.js swap it in.
// Every page works without this file (zip uploads and plain form posts).
(function () {
  "use strict";
  // Pages swapped in by htmx bring this script again; set the listeners up once.
  if (window.benchwrightRuns) return;
  window.benchwrightRuns = true;

  // A folder upload sends each file's path next to it, because the server only sees base
  // names. Only one of the two pickers is used at a time.
  document.addEventListener("change", function (event) {
    var input = event.target;
    var form = input.closest && input.closest("form[data-runs-upload]");
    if (!form) return;
    var zip = form.querySelector("[data-zip-input]");
    var folder = form.querySelector("[data-folder-input]");
    if (input === zip && zip.files.length) folder.value = "";
    if (input === folder && folder.files.length) zip.value = "";
    form.querySelectorAll("input[name=paths]").forEach(function (el) { el.remove(); });
    if (folder.files.length) {
      Array.prototype.forEach.call(folder.files, function (file) {
        var hidden = document.createElement("input");
        hidden.type = "hidden";
        hidden.name = "paths";
        hidden.value = file.webkitRelativePath || file.name;
        form.appendChild(hidden);
      });
    }
  });

  // The visual check a key answers: the one last clicked, else the first unanswered one.
  var current = null;
  document.addEventListener("click", function (event) {
    var li = event.target.closest && event.target.closest("[data-run-checks] li.answerable, [data-run-checks] li.search-answerable");
    if (!li) return;
    current = li.dataset.checkpoint;
    document.querySelectorAll("[data-run-checks] li.current").forEach(function (el) { el.classList.remove("current"); });
    li.classList.add("current");
  });

  // kind: "answerable" (visual checks) or "search-answerable" (search checks).
  function target(kind) {
    var box = document.querySelector("[data-run-checks]");
    if (!box) return null;
    if (current) {
      var chosen = box.querySelector("li." + kind + '[data-checkpoint="' + CSS.escape(current) + '"]');
      if (chosen) return chosen;
    }
    var open = kind === "answerable" ? "unanswered" : "search-unanswered";
    return box.querySelector("li." + kind + "." + open) || box.querySelector("li." + kind);
  }

  // y/n answer the visual check, p/f the search check (the button of that answer), 1-7 pick
  // a failure mode.
  window.Benchwright.shortcuts({
    y: answer,
    n: answer,
    p: answer,
    f: answer,
  }, { scope: "[data-run-checks]" });

  function answer(event) {
    var key = event.key.toLowerCase();
    var li = target(key === "p" || key === "f" ? "search-answerable" : "answerable");
    var button = li && li.querySelector('button[data-key="' + event.key.toLowerCase() + '"]');
    if (!button) return false;
    button.click();
  }

  var modes = {};
  for (var i = 1; i <= 7; i++) modes[String(i)] = pickMode;
  window.Benchwright.shortcuts(modes, { scope: "[data-label-form]" });

  function pickMode(event, form) {
    var radio = form.querySelectorAll("input[name=mode]")[Number(event.key) - 1];
    if (!radio) return false;
    radio.checked = true;
    radio.focus();
  }

  // After an answer the next unanswered check is the one the keys answer.
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail.target && event.detail.target.id === "run-checks") current = null;
  });
})();
