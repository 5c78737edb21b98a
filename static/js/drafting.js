// Backward drafting: keyboard marks on the selected answer, Ctrl+Enter to ask. A stale draft's
// 409 answer is swapped in by app.js (data-swap-errors="409" on #drafting-draft).
// Every action also works without this file.
(function () {
  "use strict";

  var PERCEIVES = { y: "yes", n: "no" };
  var VERDICTS = { c: "correct", h: "hallucination", u: "unsure" };

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

  function mark(name, values) {
    return function (event) {
      var card = activeCard();
      if (!card) return false;
      check(card, name, values[event.key.toLowerCase()]);
    };
  }

  function step(by) {
    return function () {
      var all = cards();
      if (!all.length) return false;
      var index = all.indexOf(activeCard());
      var next = all[Math.max(0, Math.min(all.length - 1, index + by))];
      if (next) { next.focus(); next.scrollIntoView({ block: "nearest" }); }
    };
  }

  window.Benchwright.shortcuts({
    // Ctrl/Cmd+Enter in a step's text field asks the model (submits that form).
    "ctrl+Enter": function (event, drafting) {
      var form = event.target.closest && event.target.closest("form");
      if (!form || !drafting.contains(form)) return false;
      form.requestSubmit();
    },
    j: step(1),
    k: step(-1),
    y: mark("perceives", PERCEIVES),
    n: mark("perceives", PERCEIVES),
    c: mark("verdict", VERDICTS),
    h: mark("verdict", VERDICTS),
    u: mark("verdict", VERDICTS),
    s: function () {
      var card = activeCard();
      var markForm = card && card.querySelector("form");
      if (!markForm) return false;
      markForm.requestSubmit();
    },
  }, { scope: "[data-drafting]", inputs: ["ctrl+Enter"], repeat: ["j", "k"] });

  // After a mark is saved, keep the keyboard on the same answer.
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (target && target.id && target.id.indexOf("drafting-call-") === 0) {
      var card = document.getElementById(target.id);
      if (card) card.focus();
    }
  });
})();
