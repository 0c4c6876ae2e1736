import type { IRouter } from 'express';
import {
  API_BASE_PATH,
  ICON_PATH,
  ICON_SVG,
  openapiDocument,
  PRODUCT_NAME,
  renderReferencePage,
} from '@trips/contracts';
import { sendJsonBytes } from '../http/send-json.ts';

/**
 * The public contract, readable without a key: the OpenAPI document, its reference page, the
 * root, which points to them, and the icon the pages link.
 * Added to the caller's router, not a Router of their own: see app.ts for why. Returns the paths
 * it adds.
 */
export function addDocsRoutes(router: IRouter): string[] {
  // Serialised once: the document is fixed for the life of the process.
  const openapiJson = Buffer.from(JSON.stringify(openapiDocument));
  const referencePage = renderReferencePage(openapiDocument);
  const documentPath = '/api/v1/openapi.json';
  router.get(documentPath, (_req, res) => {
    sendJsonBytes(res, openapiJson);
  });
  const pagePath = '/docs';
  router.get(pagePath, (_req, res) => {
    res.type('text/html').send(referencePage);
  });
  // The root points to the docs: a browser is sent there, a program gets the links as JSON.
  const rootPath = '/';
  const root = Buffer.from(
    JSON.stringify({
      name: `${PRODUCT_NAME} API`,
      docs: pagePath,
      openapi: documentPath,
      api: API_BASE_PATH,
      settings: '/settings',
    }),
  );
  router.get(rootPath, (req, res) => {
    res.set('Link', `<${pagePath}>; rel="service-doc", <${documentPath}>; rel="service-desc"`);
    if (req.accepts(['json', 'html']) === 'html') return res.redirect(302, pagePath);
    sendJsonBytes(res, root);
  });
  // Also at /favicon.ico, which a browser asks for by itself on a page that names no icon (JSON).
  const icon = Buffer.from(ICON_SVG);
  const iconPaths = [ICON_PATH, '/favicon.ico'];
  router.get(iconPaths, (_req, res) => {
    res
      .set({ 'Cache-Control': 'public, max-age=86400', 'Content-Security-Policy': "default-src 'none'" })
      .type('image/svg+xml')
      .send(icon);
  });
  return [documentPath, pagePath, rootPath, ...iconPaths];
}
