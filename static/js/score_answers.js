// Score model answers: a progress bar while the files upload, then an indeterminate bar
// while the server scores them. Works on the form htmx posts (hx-post on #score-answers-form).
(function () {
  "use strict";

  function parts(form) {
    var box = form.querySelector("#score-progress");
    if (!box) return null;
    return {
      box: box,
      bar: box.querySelector(".progress"),
      fill: box.querySelector(".progress-bar"),
      label: box.querySelector("[data-progress-label]"),
    };
  }

  function show(p, percent, text) {
    p.bar.classList.toggle("progress-indeterminate", percent === null);
    p.fill.style.width = (percent === null ? 100 : percent) + "%";
    p.bar.setAttribute("aria-valuenow", percent === null ? "100" : String(Math.round(percent)));
    p.label.textContent = text;
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = event.target;
    if (!form || form.id !== "score-answers-form") return;
    var p = parts(form);
    if (p) show(p, 0, "Uploading…");
  });

  document.addEventListener("htmx:xhr:progress", function (event) {
    var form = event.target;
    if (!form || form.id !== "score-answers-form") return;
    var p = parts(form);
    var detail = event.detail || {};
    if (!p || !detail.lengthComputable || !detail.total) return;
    var percent = (100 * detail.loaded) / detail.total;
    if (percent >= 100) show(p, null, "Scoring…");
    else show(p, percent, "Uploading… " + Math.round(percent) + "%");
  });
})();
