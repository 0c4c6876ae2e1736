import type { IRouter } from 'express';
import { openapiDocument, renderReferencePage } from '@trips/contracts';
import { sendJsonBytes } from '../http/send-json.ts';

/**
 * The public contract, readable without a key: the OpenAPI document and its reference page.
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
  return [documentPath, pagePath];
}
