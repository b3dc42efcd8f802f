// A process's memory of something per model (a reasoning field's name, a thinking model, a summarizer's
// room to think), bounded: a client naming a new model with every request cannot grow it past `max`
// entries; the oldest goes first.

/** Sets `key` in `map`, the oldest entry out first when a new key would pass `max` entries. */
export function setWithin<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  if (!map.has(key) && map.size >= max) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
