/**
 * A lower bound of the UTF-8 bytes of `JSON.stringify(value)` (strings count one byte per UTF-16 unit, escapes
 * and multi-byte characters aside), or `undefined` as soon as it exceeds `budget`. Every step adds at least one
 * byte, so a huge or cyclic input costs at most `budget` steps: this check runs before any walk, and the exact
 * size is measured on the canonical form of a card that passed everything else.
 */
export function serializedSizeAtLeast(value: unknown, budget: number): number | undefined {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    size += typeof next === "string" ? next.length + 2 : valueSize(next, stack, budget - size);
    if (size > budget) return undefined;
  }
  return size;
}

/** Punctuation of containers and scalars; members are pushed onto the stack. Stops counting past `budget`. */
function valueSize(value: unknown, stack: unknown[], budget: number): number {
  if (value === null) return 4;
  if (typeof value === "boolean") return value ? 4 : 5;
  if (typeof value === "number") return Number.isFinite(value) ? String(value).length : 4;
  if (Array.isArray(value)) {
    if (value.length > budget) return value.length;
    for (const item of value) stack.push(item ?? null);
    return 2 + Math.max(0, value.length - 1);
  }
  if (typeof value === "object") {
    let size = 2;
    let members = 0;
    for (const key in value) {
      const member = (value as Record<string, unknown>)[key];
      if (member === undefined || typeof member === "function") continue;
      stack.push(key, member);
      size += members++ === 0 ? 1 : 2;
      if (size > budget) break;
    }
    return size;
  }
  return 0;
}
