/**
 * UTF-8 bytes of `JSON.stringify(value)`, or `undefined` as soon as they exceed `budget`. Every step adds at
 * least one byte, so a huge or cyclic input costs at most `budget` steps: the size check runs before any walk.
 */
export function serializedSizeWithin(value: unknown, budget: number): number | undefined {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    size += typeof next === "string" ? stringSize(next, budget - size) : valueSize(next, stack, budget - size);
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

/** A JSON string's bytes: quotes, escapes, UTF-8; stops counting past `budget`. */
function stringSize(text: string, budget: number): number {
  if (text.length > budget) return text.length;
  let size = 2;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit === 0x22 || unit === 0x5c) size += 2;
    else if (unit < 0x20) size += unit === 0x08 || unit === 0x09 || unit === 0x0a || unit === 0x0c || unit === 0x0d ? 2 : 6;
    else if (unit < 0x80) size += 1;
    else if (unit < 0x800) size += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && isLowSurrogate(text.charCodeAt(index + 1))) {
      size += 4;
      index++;
    } else if (unit >= 0xd800 && unit <= 0xdfff) size += 6;
    else size += 3;
  }
  return size;
}

const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;
