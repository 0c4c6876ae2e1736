import type { IRouter } from 'express';
import { API_BASE_PATH, openapiDocument, PRODUCT_NAME, renderReferencePage } from '@trips/contracts';
import { sendJsonBytes } from '../http/send-json.ts';

/**
 * The public contract, readable without a key: the OpenAPI document, its reference page, and the
 * root, which points to them.
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
  return [documentPath, pagePath, rootPath];
}
