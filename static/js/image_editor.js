// Benchwright image editor and upload zone. Plain pointer events, no third-party code.
//
// Editor ([data-image-editor], templates/partials/image_editor.html): draw a crop box on the
// image and resize it by its handles, zoom the view, nudge the box with the arrow keys (Shift:
// 10 pixels; Alt+arrows resize it), add other operations from the toolbar, preview the result
// (rendered by the server). Keeps two hidden inputs: <prefix>recipe (the recipe JSON) and
// <prefix>box_px ([x1, y1, x2, y2] pixels of the image the crop receives).
//
// The box is kept on Agentic-MME's 0-1000 scale ([x1, y1, x2, y2] relative to width and height,
// (0, 0) top left) and becomes pixels exactly as benchmark/imaging/ops.py does:
// int(v / 1000 * side), truncation. The same IEEE double arithmetic in the same order, so the
// pixels shown here are the pixels the server crops.
//
// Upload zone ([data-image-upload]): drop files or pick them; each file goes up in its own
// request (one bad file does not stop the others), with a progress bar and a result per file.
(() => {
  "use strict";
  if (window.ImageEditor) return; // the partial may link this file more than once

  const SCALE = 1000;
  const ZOOM_STEP = 1.25;
  const GEOMETRIC = new Set(["crop", "rotate", "flip", "resize"]);

  // ------------------------------------------------------------------ coordinates

  const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));

  /** 0-1000 value to pixels: Python's int(v / 1000 * side). */
  function unitToPx(u, side) {
    return Math.trunc((u / SCALE) * side);
  }

  function bboxToPx(b, width, height) {
    return [unitToPx(b[0], width), unitToPx(b[1], height), unitToPx(b[2], width), unitToPx(b[3], height)];
  }

  /** The smallest whole 0-1000 value whose pixel is at least p (exactly p whenever the side
   *  has at most 1000 pixels; the next pixel the scale can express otherwise). */
  function pxToUnit(p, side) {
    if (p <= 0) return 0;
    if (p >= side) return SCALE;
    let u = Math.ceil((p * SCALE) / side);
    while (u > 0 && unitToPx(u - 1, side) >= p) u -= 1;
    while (u < SCALE && unitToPx(u, side) < p) u += 1;
    return u;
  }

  /** A position in image pixels (fractional, from the pointer) to the nearest 0-1000 value. */
  function pointToUnit(x, side) {
    return clamp(Math.round((x / side) * SCALE), 0, SCALE);
  }

  /** Units that move an edge by at least `pixels` pixels. */
  function unitsFor(pixels, side) {
    return Math.max(1, Math.ceil((pixels * SCALE) / side));
  }

  function boxIsValid(b, width, height) {
    if (!b || b.some((v) => typeof v !== "number" || !Number.isFinite(v))) return false;
    if (Math.min(...b) < 0 || Math.max(...b) > SCALE) return false;
    const px = bboxToPx(b, width, height);
    return px[2] > px[0] && px[3] > px[1];
  }

  // ------------------------------------------------------------------ helpers

  function csrfToken() {
    try {
      const headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
      if (headers["X-CSRFToken"]) return headers["X-CSRFToken"];
    } catch (e) {
      /* fall through to the form field or the cookie */
    }
    const field = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (field) return field.value;
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => {
      if (v === null || v === undefined || v === false) return;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    });
    children.flat().forEach((c) => c && node.append(c));
    return node;
  }

  const isTyping = (t) =>
    t && (t.tagName === "TEXTAREA" || t.tagName === "SELECT" || (t.tagName === "INPUT" && !["button", "submit", "checkbox", "radio"].includes(t.type)));

  const fmt = (v) => (Number.isInteger(v) ? String(v) : String(Math.round(v * 1000) / 1000));

  // ------------------------------------------------------------------ parameter fields

  /** A form control for one operation parameter (from ops.py's spec). onChange(value|undefined). */
  function paramField(op, spec, value, onChange) {
    const label = el("label", { class: "ie-param small", title: spec.description });
    label.append(el("span", { text: spec.name.replace(/_/g, " ") }));
    let input;
    if (spec.type === "boolean") {
      input = el("input", { type: "checkbox" });
      input.checked = value === undefined ? Boolean(spec.default) : Boolean(value);
      input.addEventListener("change", () => onChange(input.checked));
    } else if (spec.type === "string" && spec.choices) {
      input = el("select", {}, spec.choices.map((c) => el("option", { value: c, text: c })));
      input.value = value === undefined ? spec.default || spec.choices[0] : value;
      input.addEventListener("change", () => onChange(input.value));
    } else if (spec.type === "bbox" || spec.type === "box") {
      input = el("input", { type: "text", class: "ie-num-wide", placeholder: "x1, y1, x2, y2" });
      input.value = Array.isArray(value) ? value.map(fmt).join(", ") : "";
      input.addEventListener("change", () => {
        const parts = input.value.split(/[\s,]+/).filter(Boolean).map(Number);
        onChange(parts.length ? parts : undefined);
      });
    } else {
      input = el("input", {
        type: "number",
        class: "ie-num",
        step: spec.type === "integer" ? "1" : "any",
        min: spec.minimum,
        max: spec.maximum,
        placeholder: spec.default === null || spec.default === undefined ? "" : String(spec.default),
        required: spec.required,
      });
      if (value !== undefined && value !== null) input.value = String(value);
      else if (spec.required && spec.default !== null && spec.default !== undefined) input.value = String(spec.default);
      input.addEventListener("change", () => {
        if (input.value.trim() === "") onChange(undefined);
        else onChange(Number(input.value));
      });
    }
    input.dataset.param = spec.name;
    label.append(input);
    return label;
  }

  function defaultParams(spec) {
    const out = {};
    spec.params.forEach((p) => {
      if (p.choices && p.default !== null && p.default !== undefined) out[p.name] = p.default;
      if (p.required && p.default !== null && p.default !== undefined) out[p.name] = p.default;
      if (p.required && (p.default === null || p.default === undefined) && p.type === "number") out[p.name] = 90;
    });
    // Operations with "give at least one of" need one value to be valid.
    if (spec.any_of && spec.any_of.length && !spec.any_of.some((n) => n in out)) out[spec.any_of[0]] = 1.5;
    if (spec.name === "resize" && !("scale" in out) && !("width" in out) && !("height" in out)) out.scale = 2;
    return out;
  }

  // ------------------------------------------------------------------ the editor

  class Editor {
    constructor(root) {
      this.root = root;
      this.cfg = JSON.parse(root.dataset.config);
      this.specs = Object.fromEntries(this.cfg.ops.map((s) => [s.name, s]));
      this.q = (name) => root.querySelector(`[data-ie="${name}"]`);
      this.img = this.q("img");
      this.canvas = this.q("canvas");
      this.stage = this.q("stage");
      this.boxEl = this.q("box");
      this.steps = [];
      this.cropIndex = -1;
      this.stageW = this.cfg.width;
      this.stageH = this.cfg.height;
      this.stageKey = "[]";
      this.stageSeq = 0;
      this.scale = 1;
      this.fitted = false;
      this.drag = null;
      this.newOp = null;
      this.restore(this.cfg.recipe);
      this.buildOpSelect();
      this.bind();
      if (this.img.complete && this.img.naturalWidth) this.fit();
      else this.img.addEventListener("load", () => this.fitted || this.fit(), { once: true });
      this.refreshStage();
      this.render(false);
    }

    // ---- state

    get bbox() {
      return this.cropIndex >= 0 ? this.steps[this.cropIndex].params.bbox_2d : null;
    }

    set bbox(b) {
      if (b === null) {
        if (this.cropIndex >= 0) {
          this.steps.splice(this.cropIndex, 1);
          this.cropIndex = -1;
        }
        return;
      }
      if (this.cropIndex < 0) {
        const params = { bbox_2d: b };
        const zoom = Number(this.q("zoom-scale").value);
        if (zoom && zoom !== 1) params.zoom_scale = zoom;
        this.steps.push({ op: "crop", params });
        this.cropIndex = this.steps.length - 1;
      } else {
        this.steps[this.cropIndex].params.bbox_2d = b;
      }
    }

    restore(recipe) {
      this.steps = [];
      this.cropIndex = -1;
      if (!recipe || !Array.isArray(recipe.steps)) return;
      recipe.steps.forEach((step) => {
        if (!step || typeof step.op !== "string") return;
        const params = Object.assign({}, step.params || {});
        this.steps.push({ op: step.op, params });
        if (this.cropIndex < 0 && step.op === "crop" && Array.isArray(params.bbox_2d)) {
          this.cropIndex = this.steps.length - 1;
        }
      });
      if (this.cropIndex >= 0) {
        const zoom = this.steps[this.cropIndex].params.zoom_scale;
        if (zoom) this.q("zoom-scale").value = String(zoom);
      }
    }

    recipe() {
      if (!this.steps.length) return null;
      return {
        version: 1,
        source_sha256: this.cfg.sha256,
        steps: this.steps.map((s) => ({ op: s.op, params: this.cleanParams(s) })),
      };
    }

    cleanParams(step) {
      const out = {};
      Object.entries(step.params).forEach(([k, v]) => {
        if (v === undefined || v === null || (typeof v === "number" && Number.isNaN(v))) return;
        out[k] = v;
      });
      return out;
    }

    /** The steps before the crop (all of them without a crop): what the stage shows. */
    preSteps() {
      return this.cropIndex >= 0 ? this.steps.slice(0, this.cropIndex) : this.steps.slice();
    }

    boxPx() {
      const b = this.bbox;
      return b ? bboxToPx(b, this.stageW, this.stageH) : null;
    }

    // ---- stage (the image the crop receives)

    refreshStage() {
      const pre = this.preSteps().map((s) => ({ op: s.op, params: this.cleanParams(s) }));
      const key = JSON.stringify(pre);
      if (key === this.stageKey) return;
      this.stageKey = key;
      const seq = ++this.stageSeq;
      if (!pre.length) {
        this.setStage(this.cfg.src, this.cfg.width, this.cfg.height);
        return;
      }
      const busy = this.q("stage-busy");
      busy.hidden = false;
      this.post(this.cfg.previewUrl, { version: 1, source_sha256: this.cfg.sha256, steps: pre })
        .then(async (response) => {
          if (seq !== this.stageSeq) return;
          if (!response.ok) {
            this.say(`The steps before the crop cannot be shown: ${await response.text()}`, true);
            return;
          }
          const width = Number(response.headers.get("X-Image-Width"));
          const height = Number(response.headers.get("X-Image-Height"));
          const url = URL.createObjectURL(await response.blob());
          if (seq !== this.stageSeq) return;
          this.setStage(url, width, height);
        })
        .catch(() => this.say("The server could not be reached for the preview.", true))
        .finally(() => {
          if (seq === this.stageSeq) busy.hidden = true;
        });
    }

    setStage(src, width, height) {
      const previous = this.img.src;
      const ratioChanged = width / height !== this.stageW / this.stageH;
      this.stageW = width;
      this.stageH = height;
      this.img.src = src;
      if (previous.startsWith("blob:") && previous !== src) URL.revokeObjectURL(previous);
      if (ratioChanged) this.fit();
      this.render(false);
    }

    // ---- view

    fit() {
      const available = Math.max(200, this.stage.clientWidth - 4);
      const tall = Math.max(200, window.innerHeight * 0.7);
      this.scale = Math.min(1, available / this.stageW, tall / this.stageH);
      this.fitted = true;
      this.layout();
    }

    zoom(factor) {
      const cx = (this.stage.scrollLeft + this.stage.clientWidth / 2) / this.scale;
      const cy = (this.stage.scrollTop + this.stage.clientHeight / 2) / this.scale;
      this.scale = clamp(this.scale * factor, 0.02, 16);
      this.layout();
      this.stage.scrollLeft = cx * this.scale - this.stage.clientWidth / 2;
      this.stage.scrollTop = cy * this.scale - this.stage.clientHeight / 2;
    }

    layout() {
      const w = Math.round(this.stageW * this.scale);
      const h = Math.round(this.stageH * this.scale);
      this.canvas.style.width = `${w}px`;
      this.canvas.style.height = `${h}px`;
      this.img.style.width = `${w}px`;
      this.img.style.height = `${h}px`;
      this.q("zoom").textContent = `${Math.round(this.scale * 100)}%`;
      this.drawBox();
    }

    drawBox() {
      const px = this.boxPx();
      this.boxEl.hidden = !px;
      if (!px) return;
      const s = this.scale;
      Object.assign(this.boxEl.style, {
        left: `${px[0] * s}px`,
        top: `${px[1] * s}px`,
        width: `${(px[2] - px[0]) * s}px`,
        height: `${(px[3] - px[1]) * s}px`,
      });
    }

    say(message, error) {
      const box = this.q("message");
      box.textContent = message || "";
      box.classList.toggle("ie-error", Boolean(error));
    }

    // ---- output

    render(changed = true) {
      this.drawBox();
      const b = this.bbox;
      const px = this.boxPx();
      this.root.querySelectorAll("[data-ie-bbox]").forEach((input) => {
        if (document.activeElement !== input || !changed) input.value = b ? fmt(b[Number(input.dataset.ieBbox)]) : "";
      });
      this.root.querySelectorAll("[data-ie-px]").forEach((input) => {
        input.max = String(Number(input.dataset.iePx) % 2 === 0 ? this.stageW : this.stageH);
        if (document.activeElement !== input || !changed) input.value = px ? String(px[Number(input.dataset.iePx)]) : "";
      });
      const size = this.q("size");
      if (px) {
        size.textContent = `${px[2] - px[0]} × ${px[3] - px[1]} px of ${this.stageW} × ${this.stageH}`;
      } else {
        size.textContent = "No box: drag on the image to draw one.";
      }
      const recipe = this.recipe();
      const recipeText = recipe ? JSON.stringify(recipe) : "";
      this.q("recipe").value = recipeText;
      this.q("box_px").value = px ? JSON.stringify(px) : "";
      this.q("json").textContent = recipe ? JSON.stringify(recipe, null, 2) : "(no operations)";
      this.renderSteps();
      if (changed) {
        this.root.dispatchEvent(
          new CustomEvent("image-editor:change", {
            bubbles: true,
            detail: { recipe, box_px: px, bbox_2d: b ? b.slice() : null },
          }),
        );
      }
    }

    renderSteps() {
      const list = this.q("steps");
      list.replaceChildren();
      if (!this.steps.length) {
        list.append(el("li", { class: "muted small ie-empty", text: "No operations yet." }));
        return;
      }
      this.steps.forEach((step, index) => {
        const spec = this.specs[step.op];
        const li = el("li", { class: "ie-step", "data-step": index, "data-op": step.op });
        const head = el("div", { class: "ie-step-head" }, el("span", { class: "strong", text: spec ? spec.label : step.op }));
        const tools = el("span", { class: "ie-step-tools" });
        const button = (label, title, fn, disabled) => {
          const b = el("button", { type: "button", class: "btn btn-small btn-ghost", title, "aria-label": title, text: label, disabled });
          b.addEventListener("click", fn);
          tools.append(b);
        };
        button("↑", "Move up", () => this.moveStep(index, -1), index === 0);
        button("↓", "Move down", () => this.moveStep(index, 1), index === this.steps.length - 1);
        button("×", "Remove", () => this.removeStep(index));
        head.append(tools);
        li.append(head);
        if (index === this.cropIndex) {
          const px = this.boxPx();
          const where = `[${step.params.bbox_2d.map(fmt).join(", ")}] on 0–1000 = [${px.join(", ")}] px`;
          li.append(el("div", { class: "small muted ie-step-box", text: where }));
        }
        if (spec) {
          const fields = el("div", { class: "ie-step-params" });
          spec.params.forEach((p) => {
            if (index === this.cropIndex && p.name !== "zoom_scale") return;
            if (step.op === "crop" && index !== this.cropIndex && p.name === "box" && !("box" in step.params)) return;
            fields.append(
              paramField(step.op, p, step.params[p.name], (value) => {
                if (value === undefined) delete step.params[p.name];
                else step.params[p.name] = value;
                if (index === this.cropIndex && p.name === "zoom_scale") this.q("zoom-scale").value = String(value || 1);
                this.changed(index < this.cropIndex || this.cropIndex < 0);
              }),
            );
          });
          if (fields.childNodes.length) li.append(fields);
        }
        list.append(li);
      });
    }

    /** After any change to the steps: redraw, and refresh the stage when it may differ. */
    changed(stageMayChange) {
      if (stageMayChange) this.refreshStage();
      this.render(true);
    }

    moveStep(index, delta) {
      const to = index + delta;
      if (to < 0 || to >= this.steps.length) return;
      const [step] = this.steps.splice(index, 1);
      this.steps.splice(to, 0, step);
      if (this.cropIndex === index) this.cropIndex = to;
      else if (this.cropIndex === to) this.cropIndex = index;
      this.changed(true);
    }

    removeStep(index) {
      this.steps.splice(index, 1);
      if (index === this.cropIndex) this.cropIndex = -1;
      else if (index < this.cropIndex) this.cropIndex -= 1;
      this.changed(true);
    }

    // ---- toolbar

    buildOpSelect() {
      const select = this.q("op-select");
      const groups = {};
      this.cfg.ops.forEach((spec) => {
        if (spec.name === "crop") return;
        if (!groups[spec.category]) {
          groups[spec.category] = el("optgroup", { label: spec.category });
          select.append(groups[spec.category]);
        }
        groups[spec.category].append(el("option", { value: spec.name, text: spec.label, title: spec.description }));
      });
      select.addEventListener("change", () => this.pickOp(select.value));
    }

    pickOp(name) {
      const holder = this.q("op-params");
      holder.replaceChildren();
      const add = this.root.querySelector("[data-ie-action=add-op]");
      const spec = this.specs[name];
      if (!spec) {
        this.newOp = null;
        add.disabled = true;
        return;
      }
      this.newOp = { op: name, params: defaultParams(spec) };
      spec.params.forEach((p) => {
        holder.append(
          paramField(name, p, this.newOp.params[p.name], (value) => {
            if (value === undefined) delete this.newOp.params[p.name];
            else this.newOp.params[p.name] = value;
          }),
        );
      });
      add.disabled = false;
    }

    addOp() {
      if (!this.newOp) return;
      this.steps.push({ op: this.newOp.op, params: Object.assign({}, this.newOp.params) });
      const spec = this.specs[this.newOp.op];
      this.say(`${spec.label} added as step ${this.steps.length}.`);
      this.q("op-select").value = "";
      this.pickOp("");
      this.changed(this.cropIndex < 0);
    }

    preview() {
      const recipe = this.recipe();
      if (!recipe) {
        this.say("Nothing to preview yet: draw a crop box or add an operation.", true);
        return;
      }
      this.say("Rendering the preview…");
      this.post(this.cfg.previewUrl, recipe)
        .then(async (response) => {
          if (!response.ok) {
            this.say(await response.text(), true);
            return;
          }
          const width = response.headers.get("X-Image-Width");
          const height = response.headers.get("X-Image-Height");
          const scaled = response.headers.get("X-Image-Scaled") === "1";
          const figure = this.q("preview");
          const img = this.q("preview-img");
          if (img.src.startsWith("blob:")) URL.revokeObjectURL(img.src);
          img.src = URL.createObjectURL(await response.blob());
          figure.hidden = false;
          this.q("preview-info").textContent = `Result: ${width} × ${height} px${scaled ? " (shown scaled down)" : ""}.`;
          this.say("");
        })
        .catch(() => this.say("The server could not be reached for the preview.", true));
    }

    post(url, recipe) {
      return fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify(recipe),
      });
    }

    // ---- numeric inputs

    setBoxFromInputs(kind, index, raw) {
      const value = Number(raw);
      if (raw === "" || !Number.isFinite(value)) return;
      let b = this.bbox ? this.bbox.slice() : null;
      if (!b) {
        // No box yet: start from the whole image and set the edge that was typed.
        b = [0, 0, SCALE, SCALE];
      }
      const side = index % 2 === 0 ? this.stageW : this.stageH;
      b[index] = kind === "px" ? pxToUnit(Math.round(value), side) : clamp(value, 0, SCALE);
      if (!boxIsValid(b, this.stageW, this.stageH)) {
        this.say(`That box is empty or reversed: x1 must be less than x2 and y1 less than y2 (in pixels of a ${this.stageW} × ${this.stageH} image).`, true);
        this.render(false);
        return;
      }
      this.say("");
      this.bbox = b;
      this.render(true);
    }

    // ---- pointer

    toImage(event) {
      const rect = this.canvas.getBoundingClientRect();
      return {
        x: clamp((event.clientX - rect.left) / this.scale, 0, this.stageW),
        y: clamp((event.clientY - rect.top) / this.scale, 0, this.stageH),
      };
    }

    pointerDown(event) {
      if (event.button !== 0) return;
      event.preventDefault();
      this.stage.focus({ preventScroll: true });
      const p = this.toImage(event);
      const handle = event.target.dataset && event.target.dataset.h;
      const start = this.bbox ? this.bbox.slice() : null;
      if (handle && start) this.drag = { mode: "resize", handle, start, p };
      else if (start && event.target.closest("[data-ie=box]")) this.drag = { mode: "move", start, p };
      else {
        const u = [pointToUnit(p.x, this.stageW), pointToUnit(p.y, this.stageH)];
        this.drag = { mode: "draw", anchor: u, start, created: !start };
      }
      this.canvas.setPointerCapture(event.pointerId);
    }

    pointerMove(event) {
      const d = this.drag;
      if (!d) return;
      const p = this.toImage(event);
      const ux = pointToUnit(p.x, this.stageW);
      const uy = pointToUnit(p.y, this.stageH);
      let b;
      if (d.mode === "draw") {
        const [ax, ay] = d.anchor;
        b = [Math.min(ax, ux), Math.min(ay, uy), Math.max(ax, ux), Math.max(ay, uy)];
      } else if (d.mode === "move") {
        const s = d.start;
        let dx = Math.round(((p.x - d.p.x) / this.stageW) * SCALE);
        let dy = Math.round(((p.y - d.p.y) / this.stageH) * SCALE);
        dx = clamp(dx, -s[0], SCALE - s[2]);
        dy = clamp(dy, -s[1], SCALE - s[3]);
        b = [s[0] + dx, s[1] + dy, s[2] + dx, s[3] + dy];
      } else {
        b = d.start.slice();
        if (d.handle.includes("w")) b[0] = Math.min(ux, b[2] - 1);
        if (d.handle.includes("e")) b[2] = Math.max(ux, b[0] + 1);
        if (d.handle.includes("n")) b[1] = Math.min(uy, b[3] - 1);
        if (d.handle.includes("s")) b[3] = Math.max(uy, b[1] + 1);
      }
      if (d.mode === "draw" && (b[2] === b[0] || b[3] === b[1])) return; // not a box yet
      this.bbox = b;
      d.moved = true;
      this.render(false);
    }

    pointerUp(event) {
      const d = this.drag;
      if (!d) return;
      this.drag = null;
      if (this.canvas.hasPointerCapture(event.pointerId)) this.canvas.releasePointerCapture(event.pointerId);
      if (!d.moved) return;
      if (!boxIsValid(this.bbox, this.stageW, this.stageH)) {
        this.say("That box covers no whole pixel; draw a larger one.", true);
        if (d.start) this.bbox = d.start;
        else this.bbox = null;
      } else {
        this.say("");
      }
      this.render(true);
    }

    // ---- keyboard

    nudge(dxPx, dyPx, resize) {
      const b = this.bbox;
      if (!b) return false;
      const next = b.slice();
      const dx = dxPx ? Math.sign(dxPx) * unitsFor(Math.abs(dxPx), this.stageW) : 0;
      const dy = dyPx ? Math.sign(dyPx) * unitsFor(Math.abs(dyPx), this.stageH) : 0;
      if (resize) {
        next[2] = clamp(next[2] + dx, next[0] + 1, SCALE);
        next[3] = clamp(next[3] + dy, next[1] + 1, SCALE);
        if (!boxIsValid(next, this.stageW, this.stageH)) return true;
      } else {
        const mx = clamp(dx, -next[0], SCALE - next[2]);
        const my = clamp(dy, -next[1], SCALE - next[3]);
        next[0] += mx;
        next[2] += mx;
        next[1] += my;
        next[3] += my;
      }
      this.bbox = next;
      this.render(true);
      return true;
    }

    keyDown(event) {
      const t = event.target;
      if (isTyping(t)) {
        if (event.key === "Enter" && (t.dataset.ieBbox !== undefined || t.dataset.iePx !== undefined)) {
          event.preventDefault();
          t.dispatchEvent(new Event("change", { bubbles: true }));
        }
        return;
      }
      if (event.ctrlKey || event.metaKey) return;
      const step = event.shiftKey ? 10 : 1;
      const arrows = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
      if (arrows[event.key]) {
        if (this.nudge(...arrows[event.key], event.altKey)) event.preventDefault();
        return;
      }
      if (event.altKey) return;
      const keys = {
        "+": () => this.zoom(ZOOM_STEP),
        "=": () => this.zoom(ZOOM_STEP),
        "-": () => this.zoom(1 / ZOOM_STEP),
        0: () => this.fit(),
        p: () => this.preview(),
        Delete: () => this.clearBox(),
        Backspace: () => this.clearBox(),
      };
      const run = keys[event.key];
      if (run) {
        event.preventDefault();
        run();
      }
    }

    clearBox() {
      if (this.cropIndex < 0) return;
      this.bbox = null;
      this.changed(true);
    }

    bind() {
      this.canvas.addEventListener("pointerdown", (e) => this.pointerDown(e));
      this.canvas.addEventListener("pointermove", (e) => this.pointerMove(e));
      this.canvas.addEventListener("pointerup", (e) => this.pointerUp(e));
      this.canvas.addEventListener("pointercancel", (e) => this.pointerUp(e));
      this.root.addEventListener("keydown", (e) => this.keyDown(e));
      this.root.addEventListener("click", (event) => {
        const button = event.target.closest("[data-ie-action]");
        if (!button || !this.root.contains(button)) return;
        const actions = {
          "zoom-in": () => this.zoom(ZOOM_STEP),
          "zoom-out": () => this.zoom(1 / ZOOM_STEP),
          fit: () => this.fit(),
          "clear-box": () => this.clearBox(),
          preview: () => this.preview(),
          "add-op": () => this.addOp(),
        };
        const run = actions[button.dataset.ieAction];
        if (run) {
          event.preventDefault();
          run();
        }
      });
      this.root.querySelectorAll("[data-ie-bbox]").forEach((input) =>
        input.addEventListener("change", () => this.setBoxFromInputs("bbox", Number(input.dataset.ieBbox), input.value)),
      );
      this.root.querySelectorAll("[data-ie-px]").forEach((input) =>
        input.addEventListener("change", () => this.setBoxFromInputs("px", Number(input.dataset.iePx), input.value)),
      );
      this.q("zoom-scale").addEventListener("change", (event) => {
        const value = Number(event.target.value);
        if (this.cropIndex < 0) return;
        if (!value || value === 1) delete this.steps[this.cropIndex].params.zoom_scale;
        else this.steps[this.cropIndex].params.zoom_scale = value;
        this.render(true);
      });
    }
  }

  // ------------------------------------------------------------------ upload zone

  function initUpload(form) {
    const input = form.querySelector("input[type=file]");
    const zone = form.querySelector("[data-drop-zone]") || form;
    const list = form.querySelector("[data-upload-results]");
    const bar = form.querySelector("[data-upload-progress]");
    const label = form.querySelector("[data-upload-label]");
    let busy = false;

    const row = (file) => {
      const li = el("li", { class: "upload-row" }, el("span", { class: "upload-name", text: file.name }), el("span", { class: "upload-state small muted", text: "waiting" }));
      list.append(li);
      return li;
    };

    function send(file, li, onProgress) {
      return new Promise((resolve) => {
        const data = new FormData();
        data.append("files", file, file.name);
        const xhr = new XMLHttpRequest();
        xhr.open("POST", form.action);
        xhr.setRequestHeader("X-CSRFToken", csrfToken());
        xhr.setRequestHeader("Accept", "application/json");
        xhr.upload.addEventListener("progress", (e) => e.lengthComputable && onProgress(e.loaded));
        xhr.addEventListener("load", () => {
          let body = null;
          try {
            body = JSON.parse(xhr.responseText);
          } catch (e) {
            body = null;
          }
          const result = body && body.results && body.results[0];
          const state = li.querySelector(".upload-state");
          state.classList.remove("muted");
          if (result && result.ok) {
            li.classList.add("upload-ok");
            state.replaceChildren(
              document.createTextNode(result.duplicate ? "already stored · " : "stored · "),
              el("a", { href: result.image.edit_url, text: "open in the editor" }),
              document.createTextNode(result.note ? ` · ${result.note}` : ""),
            );
          } else {
            li.classList.add("upload-error");
            const message = (result && result.error) || (body && body.error) || `the server answered HTTP ${xhr.status}`;
            state.textContent = message;
          }
          resolve();
        });
        xhr.addEventListener("error", () => {
          li.classList.add("upload-error");
          li.querySelector(".upload-state").textContent = "the server could not be reached";
          resolve();
        });
        li.querySelector(".upload-state").textContent = "uploading…";
        xhr.send(data);
      });
    }

    async function upload(files) {
      if (!files.length || busy) return;
      busy = true;
      form.classList.add("uploading");
      const total = files.reduce((n, f) => n + f.size, 0) || 1;
      let done = 0;
      bar.hidden = false;
      const fill = bar.querySelector(".progress-bar");
      const show = (loaded) => {
        const percent = Math.min(100, Math.round((100 * (done + loaded)) / total));
        fill.style.width = `${percent}%`;
        bar.setAttribute("aria-valuenow", String(percent));
        if (label) label.textContent = `${percent}%`;
      };
      const rows = files.map(row);
      for (let i = 0; i < files.length; i += 1) {
        await send(files[i], rows[i], (loaded) => show(loaded));
        done += files[i].size;
        show(0);
      }
      if (label) label.textContent = `${files.length} file${files.length === 1 ? "" : "s"} done`;
      busy = false;
      form.classList.remove("uploading");
      input.value = "";
      const grid = document.getElementById("image-grid");
      if (grid && window.htmx) window.htmx.ajax("GET", window.location.pathname, { target: "#image-grid", swap: "outerHTML" });
      form.dispatchEvent(new CustomEvent("image-upload:done", { bubbles: true }));
    }

    input.addEventListener("change", () => upload([...input.files]));
    ["dragenter", "dragover"].forEach((type) =>
      zone.addEventListener(type, (e) => {
        e.preventDefault();
        zone.classList.add("drag-over");
      }),
    );
    ["dragleave", "drop"].forEach((type) =>
      zone.addEventListener(type, (e) => {
        e.preventDefault();
        zone.classList.remove("drag-over");
      }),
    );
    zone.addEventListener("drop", (e) => upload([...(e.dataTransfer ? e.dataTransfer.files : [])]));
    form.addEventListener("submit", (e) => {
      // With JavaScript the files go up one by one; the plain submit is the fallback.
      e.preventDefault();
      upload([...input.files]);
    });
    const submit = form.querySelector("[data-upload-submit]");
    if (submit) submit.hidden = true;
  }

  // ------------------------------------------------------------------ wiring

  const editors = new WeakMap();

  function initAll(root) {
    const scope = root && root.querySelectorAll ? root : document;
    const found = [...scope.querySelectorAll("[data-image-editor]")];
    if (scope.matches && scope.matches("[data-image-editor]")) found.push(scope);
    found.forEach((node) => {
      if (editors.has(node)) return;
      try {
        editors.set(node, new Editor(node));
      } catch (error) {
        console.error("image editor", error);
      }
    });
    const uploads = [...scope.querySelectorAll("[data-image-upload]")];
    uploads.forEach((form) => {
      if (form.dataset.uploadReady) return;
      form.dataset.uploadReady = "1";
      initUpload(form);
    });
  }

  window.ImageEditor = { SCALE, unitToPx, pxToUnit, bboxToPx, pointToUnit, unitsFor, get: (node) => editors.get(node), initAll };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => initAll(document));
  else initAll(document);
  if (window.htmx) window.htmx.onLoad((node) => initAll(node));
  else document.addEventListener("htmx:load", (e) => initAll(e.target));
})();
