import { basePath } from "../http/route.ts";
import { qrCodePrefix, qrCodeSuffix } from "./gate-links.ts";

/**
 * Where a person claims an agent's link code: the app's link, and the same as a QR code below
 * `{base_url}/qr/bind/`. The code is no secret beyond its ten minutes: the person types or scans it.
 */
export const bindPrefix = "bind/";
export const linkCodeForm = /^[2-9A-HJKMNP-Z]{8}$/;

export const bindLink = (linkCode: string): string => `svc://bind/${linkCode}`;

export function bindLinks(publicOrigin: string, linkCode: string): { link_url: string; qr_code_url: string } {
  return {
    link_url: bindLink(linkCode),
    qr_code_url: `${publicOrigin}${basePath}${qrCodePrefix}${bindPrefix}${linkCode}${qrCodeSuffix}`,
  };
}

/** The link code a bind QR code's address (path below `{base_url}`) names; undefined when it is not of the form issued. */
export function bindQrTarget(path: string): string | undefined {
  const prefix = `${qrCodePrefix}${bindPrefix}`;
  const file = path.startsWith(prefix) ? path.slice(prefix.length) : "";
  const code = file.endsWith(qrCodeSuffix) ? file.slice(0, -qrCodeSuffix.length) : "";
  return linkCodeForm.test(code) ? code : undefined;
}
