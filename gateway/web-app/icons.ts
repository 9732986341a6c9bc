import { crc32, deflateSync } from "node:zlib";

/**
 * The app's icons as PNG files, drawn at build time (a white tick on the theme colour, in a circle that a
 * maskable icon's safe zone keeps whole), so no binary lives in the repository.
 */
export const themeColour = "#1f4e79";
export const iconSizes = [192, 512] as const;

const rgb = (hex: string) => [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)) as [number, number, number];

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

/** Distance from point p to the segment a–b, in pixels. */
function toSegment(px: number, py: number, [ax, ay]: number[], [bx, by]: number[]): number {
  const [dx, dy] = [(bx as number) - (ax as number), (by as number) - (ay as number)];
  const along = Math.max(
    0,
    Math.min(1, ((px - (ax as number)) * dx + (py - (ay as number)) * dy) / (dx * dx + dy * dy)),
  );
  return Math.hypot(px - ((ax as number) + along * dx), py - ((ay as number) + along * dy));
}

export function iconPng(size: number): Buffer {
  const [r, g, b] = rgb(themeColour);
  const tick = [
    [0.3, 0.52],
    [0.44, 0.66],
    [0.72, 0.36],
  ].map(([x, y]) => [(x as number) * size, (y as number) * size]);
  const rows: Buffer[] = [];
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 4);
    for (let x = 0; x < size; x++) {
      const onTick =
        Math.min(
          toSegment(x, y, tick[0] as number[], tick[1] as number[]),
          toSegment(x, y, tick[1] as number[], tick[2] as number[]),
        ) <
        size * 0.05;
      const inCircle = Math.hypot(x - size / 2, y - size / 2) < size * 0.32;
      const colour = inCircle ? (onTick ? [r, g, b] : [255, 255, 255]) : [r, g, b];
      row.set([...colour, 255], 1 + x * 4);
    }
    rows.push(row);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.concat(rows))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
