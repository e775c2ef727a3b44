/**
 * A small element builder for the studio page (no framework): `h('div.message.user', { dataset }, children)`.
 * @module
 */

/** Attributes of {@link h}: `data-*` through `dataset`, any other as an attribute (`false`/`undefined`: left out). */
export type Attributes = {
  readonly [name: string]: string | number | boolean | undefined | Readonly<Record<string, string>>;
  readonly dataset?: Readonly<Record<string, string>>;
};

/** An element `tag.class1.class2` with attributes and children (strings become text nodes). */
export function h(
  spec: string,
  attributes: Attributes | null = null,
  ...children: readonly (Node | string | null | undefined | false)[]
): HTMLElement {
  const [tag, ...classes] = spec.split('.');
  const element = document.createElement(tag || 'div');
  if (classes.length > 0) element.className = classes.join(' ');
  if (attributes !== null) {
    for (const [name, value] of Object.entries(attributes)) {
      if (name === 'dataset') Object.assign(element.dataset, value);
      else if (typeof value === 'object') continue;
      else if (value !== undefined && value !== false) element.setAttribute(name, value === true ? '' : String(value));
    }
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child);
  }
  return element;
}

/** The route of a hash link (`#/threads/<id>`), each part encoded. */
export function route(...parts: readonly string[]): string {
  return `#/${parts.map((part, i) => (i === 0 ? part : encodeURIComponent(part))).join('/')}`;
}
