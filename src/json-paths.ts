// Values inside parsed JSON by where they stand (names and indexes), and copies of a value with other
// values put at given places.

/** Where a value stands inside another: names and indexes (`['content', 0, 'text']`). */
export type JsonPath = readonly (string | number)[];

/** The value at `path` inside `value`; undefined where the path leads nowhere. */
export function valueAt(value: unknown, path: JsonPath): unknown {
  let at = value;
  for (const step of path) at = (at as Record<string | number, unknown> | null | undefined)?.[step];
  return at;
}

/**
 * `value` with `valueFor(index)` put at each of `paths` (every step but the last leading to an object or
 * an array): the objects and arrays on the way copied once each, however many paths pass through them,
 * and everything else shared with `value`.
 */
export function withValuesAt(
  value: unknown,
  paths: readonly JsonPath[],
  valueFor: (index: number) => unknown,
): unknown {
  type Container = Record<string | number, unknown>;
  const shallow = (container: unknown): Container =>
    Array.isArray(container)
      ? ([...(container as unknown[])] as unknown as Container)
      : Object.assign({}, container);
  const root = shallow(value);
  const made = new Set<unknown>([root]);
  paths.forEach((path, index) => {
    let at = root;
    path.forEach((step, depth) => {
      if (depth === path.length - 1) {
        at[step] = valueFor(index);
        return;
      }
      let next = at[step];
      if (!made.has(next)) {
        next = shallow(next);
        made.add(next);
        at[step] = next;
      }
      at = next as Container;
    });
  });
  return root;
}
