// Backward drafting: keyboard marks on the selected answer, Ctrl+Enter to ask. A stale draft's
// 409 answer is swapped in by app.js (data-swap-errors="409" on #drafting-draft).
// Every action also works without this file.
(function () {
  "use strict";

  var PERCEIVES = { y: "yes", n: "no" };
  var VERDICTS = { c: "correct", h: "hallucination", u: "unsure" };

  function typing(target) {
    if (!target || !target.closest) return false;
    if (target.closest("[data-image-editor]")) return true;
    var tag = target.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable ||
      (tag === "INPUT" && !/^(radio|checkbox|button|submit)$/i.test(target.type));
  }

  function cards() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-drafting-call]"));
  }

  // The selected answer: the one with focus, else the first unmarked one, else the last.
  function activeCard() {
    var focused = document.activeElement && document.activeElement.closest &&
      document.activeElement.closest("[data-drafting-call]");
    if (focused) return focused;
    var all = cards().filter(function (c) { return c.querySelector("form"); });
    var unmarked = all.filter(function (c) { return !c.classList.contains("drafting-call-marked"); });
    return unmarked[0] || all[all.length - 1] || null;
  }

  function check(card, name, value) {
    var input = card.querySelector('input[name="' + name + '"][value="' + value + '"]');
    if (input) { input.checked = true; card.focus(); }
  }

  document.addEventListener("keydown", function (event) {
    if (!document.querySelector("[data-drafting]")) return;
    // Ctrl/Cmd+Enter in a step's text field asks the model (submits that form).
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      var form = event.target.closest && event.target.closest("form");
      if (form && form.closest("[data-drafting]")) {
        event.preventDefault();
        form.requestSubmit();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var key = event.key.toLowerCase();
    var all = cards();
    if ((key === "j" || key === "k") && all.length) {
      var current = activeCard();
      var index = all.indexOf(current);
      var next = all[Math.max(0, Math.min(all.length - 1, index + (key === "j" ? 1 : -1)))];
      if (next) { next.focus(); next.scrollIntoView({ block: "nearest" }); }
      event.preventDefault();
      return;
    }
    var card = activeCard();
    if (!card) return;
    if (PERCEIVES[key]) { check(card, "perceives", PERCEIVES[key]); event.preventDefault(); }
    else if (VERDICTS[key]) { check(card, "verdict", VERDICTS[key]); event.preventDefault(); }
    else if (key === "s") {
      var markForm = card.querySelector("form");
      if (markForm) { event.preventDefault(); markForm.requestSubmit(); }
    }
  });

  // After a mark is saved, keep the keyboard on the same answer.
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (target && target.id && target.id.indexOf("drafting-call-") === 0) {
      var card = document.getElementById(target.id);
      if (card) card.focus();
    }
  });
})();
