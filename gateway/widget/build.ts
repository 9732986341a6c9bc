import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "rolldown";

/**
 * Builds `<svc-verify>` into `gen/` (git-ignored): one minified script named by its content,
 * `widget.<hash>.js`, and `manifest.json` naming the current one, which the gateway reads at start to
 * serve it and to publish its address and Subresource Integrity hash. Earlier versions stay beside it
 * (pages pin them with `integrity`), and are served while they are there. Fails above the size budget. Run at install (root
 * `postinstall`) and by `npm run build:widget`.
 */

/** The budget: minified and gzipped. */
const budgetBytes = 12 * 1024;
const here = dirname(fileURLToPath(import.meta.url));
const widgetGenDir = join(here, "gen");

export interface WidgetManifest {
  /** The versioned file name, served at `{base_url}/<file>`. */
  file: string;
  /** `sha384-…`, the script tag's `integrity`. */
  integrity: string;
  bytes: number;
  gzipBytes: number;
}

export async function buildWidget(): Promise<WidgetManifest> {
  const output = await build({
    input: join(here, "src/svc-verify.ts"),
    write: false,
    output: { format: "iife", minify: true },
    logLevel: "warn",
  });
  const chunk = output.output[0];
  const code = Buffer.from(chunk.code);
  const gzipBytes = gzipSync(code, { level: 9 }).length;
  if (gzipBytes > budgetBytes)
    throw new Error(`widget is ${gzipBytes} bytes minified and gzipped, above its budget of ${budgetBytes}`);
  const hash = createHash("sha256").update(code).digest("hex").slice(0, 16);
  const manifest: WidgetManifest = {
    file: `widget.${hash}.js`,
    integrity: `sha384-${createHash("sha384").update(code).digest("base64")}`,
    bytes: code.length,
    gzipBytes,
  };
  await mkdir(widgetGenDir, { recursive: true });
  await writeFile(join(widgetGenDir, manifest.file), code);
  await writeFile(join(widgetGenDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  buildWidget().then(
    (m) =>
      console.log(
        `widget: gen/${m.file}, ${m.bytes} bytes minified, ${m.gzipBytes} bytes gzipped (budget ${budgetBytes}); integrity ${m.integrity}`,
      ),
    (error: Error) => {
      console.error(`widget build failed: ${error.message}`);
      process.exitCode = 1;
    },
  );
}
