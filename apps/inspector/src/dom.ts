/**
 * A minimal DOM builder. Every piece of file-derived text goes through
 * `textContent` (never `innerHTML`), so a hostile file cannot inject markup.
 */

type Child = Node | string | number | null | undefined | false;
type Props = Record<string, string | number | boolean | ((e: Event) => void) | undefined>;

function append(parent: Node, children: readonly Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/**
 * Creates an HTML element with attributes (`on*` functions become listeners) and children.
 * @param tag - the element's tag name.
 * @param props - attributes; `true` sets an empty attribute, `false`/`undefined` omit it, functions under `on*` names become listeners.
 * @param children - nodes or text (strings and numbers become text nodes; null, undefined and false are skipped).
 * @returns the new element, typed by its tag.
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Creates an SVG element with attributes and children.
 * @param tag - the SVG element's tag name (`rect`, `text`, …).
 * @param attrs - attributes, each stringified.
 * @param children - nodes or text, as for {@link h}.
 * @returns the new element in the SVG namespace.
 */
export function s(tag: string, attrs: Record<string, string | number> = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

/**
 * A table with a heading row.
 * @param headings - the text of each column's heading cell.
 * @param rows - one array of cell contents per body row.
 * @param props - attributes of the `table` element.
 * @returns the table, with its `thead` and `tbody`.
 */
export function table(headings: readonly string[], rows: readonly (readonly Child[])[], props: Props = {}): HTMLTableElement {
  return h(
    'table',
    props,
    h('thead', {}, h('tr', {}, ...headings.map((t) => h('th', {}, t)))),
    h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', {}, c))))),
  );
}

/**
 * A titled section.
 * @param title - the text of its `h3` heading.
 * @param props - attributes of the `section` (its class is `panel` unless overridden).
 * @param children - the content below the heading.
 * @returns the section element.
 */
export function section(title: string, props: Props, ...children: Child[]): HTMLElement {
  return h('section', { class: 'panel', ...props }, h('h3', {}, title), ...children);
}
