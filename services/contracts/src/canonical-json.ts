/**
 * RFC 8785 (JSON Canonicalization Scheme): no whitespace, object keys sorted by UTF-16 code units (what
 * `Array.prototype.sort` does with strings), numbers as ECMAScript's Number-to-String (which JSON.stringify
 * uses), strings with the minimal escapes of JSON.stringify. Object members whose value is `undefined` are
 * left out, as JSON.stringify does; any other value JSON cannot hold (a non-finite number, a lone surrogate,
 * a function) throws.
 *
 * The one implementation: the trust layer writes the card whose digest a person signs with it, the
 * person's web app shows the same text (it runs this module in the browser, so it uses nothing of
 * Node), and the gateway's idempotency stage compares requests by it.
 */
export function canonicalJson(value: unknown): string {
  const sorted = sortedCopy(value);
  return sorted === UNSORTABLE ? write(value, "") : JSON.stringify(sorted);
}

const UNSORTABLE = Symbol("unsortable");
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;

/**
 * The value with every object's keys inserted in sorted order, so that the native JSON.stringify writes the
 * canonical form (several times faster than writing it by hand). JavaScript objects list array-index keys
 * ("1", "10") first whatever their insertion order, and `__proto__` cannot be assigned as an ordinary member,
 * so an object with either is written by hand instead. The copies are ordinary objects: V8 keeps objects
 * without a prototype in dictionary mode, which its serializer reads several times slower.
 */
function sortedCopy(value: unknown): unknown {
  switch (typeof value) {
    case "string":
      if (!value.isWellFormed()) throw new TypeError("RFC 8785 has no form for a lone surrogate");
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("RFC 8785 has no form for a non-finite number");
      return value;
    case "boolean":
      return value;
    case "object": {
      if (value === null) return value;
      if (Array.isArray(value)) {
        const items: unknown[] = new Array(value.length);
        for (let index = 0; index < value.length; index++) {
          const item = sortedCopy(value[index]);
          if (item === UNSORTABLE) return UNSORTABLE;
          items[index] = item;
        }
        return items;
      }
      const record = value as Record<string, unknown>;
      const copy: Record<string, unknown> = {};
      for (const key of sortedKeys(record)) {
        const member = record[key];
        if (member === undefined) continue;
        if (isArrayIndex(key) || key === "__proto__" || !key.isWellFormed()) return UNSORTABLE;
        const copied = sortedCopy(member);
        if (copied === UNSORTABLE) return UNSORTABLE;
        copy[key] = copied;
      }
      return copy;
    }
    default:
      throw new TypeError(`not a JSON value: ${typeof value}`);
  }
}

/**
 * An object's own keys in UTF-16 code unit order, as `sort()` orders strings. Objects of a card have a handful of
 * keys, which an insertion sort puts in order several times faster than the general sort.
 */
function sortedKeys(record: object): string[] {
  const keys = Object.keys(record);
  if (keys.length > 16) return keys.sort();
  for (let next = 1; next < keys.length; next++) {
    const key = keys[next] as string;
    let index = next - 1;
    for (; index >= 0 && (keys[index] as string) > key; index--) keys[index + 1] = keys[index] as string;
    keys[index + 1] = key;
  }
  return keys;
}

const isArrayIndex = (key: string) => key.charCodeAt(0) <= 0x39 && ARRAY_INDEX.test(key);

/** The canonical form written by hand: for objects with array-index keys. */
function write(value: unknown, out: string): string {
  switch (typeof value) {
    case "string":
      if (!value.isWellFormed()) throw new TypeError("RFC 8785 has no form for a lone surrogate");
      return out + JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("RFC 8785 has no form for a non-finite number");
      return out + JSON.stringify(value);
    case "boolean":
      return out + (value ? "true" : "false");
    case "object": {
      if (value === null) return `${out}null`;
      if (Array.isArray(value)) {
        out += "[";
        for (let index = 0; index < value.length; index++) out = write(value[index], index === 0 ? out : `${out},`);
        return `${out}]`;
      }
      const record = value as Record<string, unknown>;
      const keys = sortedKeys(record);
      out += "{";
      let first = true;
      for (const key of keys) {
        const member = record[key];
        if (member === undefined) continue;
        if (!key.isWellFormed()) throw new TypeError("RFC 8785 has no form for a lone surrogate");
        out = write(member, `${out}${first ? "" : ","}${JSON.stringify(key)}:`);
        first = false;
      }
      return `${out}}`;
    }
    default:
      throw new TypeError(`not a JSON value: ${typeof value}`);
  }
}
