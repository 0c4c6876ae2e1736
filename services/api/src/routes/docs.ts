import type { IRouter } from 'express';
import { openapiDocument, renderReferencePage } from '@trips/contracts';
import { methodNotAllowed } from '../errors.ts';
import { sendJsonBytes } from '../http/send-json.ts';

/**
 * The public contract, readable without a key: the OpenAPI document and its reference page.
 * Added to the caller's router, not a Router of their own: see app.ts for why.
 */
export function addDocsRoutes(router: IRouter): void {
  // Serialised once: the document is fixed for the life of the process.
  const openapiJson = Buffer.from(JSON.stringify(openapiDocument));
  const referencePage = renderReferencePage(openapiDocument);
  router.get('/api/v1/openapi.json', (_req, res) => {
    sendJsonBytes(res, openapiJson);
  });
  router.get('/docs', (_req, res) => {
    res.type('text/html').send(referencePage);
  });
  router.all(['/api/v1/openapi.json', '/docs'], methodNotAllowed);
}
