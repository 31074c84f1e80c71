// Small DOM and number helpers shared by the page's modules (app.js, compare.js).

/// An element with attributes (`class`, `style`, others as given) and children (nodes or text).
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k === 'style') e.style.cssText = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : String(c ?? ''));
  return e;
}

/// A figure as the page prints it: integers grouped, others to `digits` decimals; null as n/a.
export function num(x, digits = 3) {
  if (x === null || x === undefined) return 'n/a';
  if (typeof x !== 'number') return String(x);
  return Number.isInteger(x) ? x.toLocaleString('en-US') : x.toLocaleString('en-US', { maximumFractionDigits: digits });
}

/// The step view's options of the form (`--steps`, `--step-name`): a trace's and a comparison's.
export function stepOptions() {
  const name = document.querySelector('#step-name').value.trim();
  if (name) return { steps: true, step_name: name };
  return document.querySelector('#steps-toggle').checked ? { steps: true } : {};
}
