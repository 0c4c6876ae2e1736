import type { IRouter } from 'express';
import { openapiDocument, renderReferencePage } from '@trips/contracts';

/**
 * The public contract, readable without a key: the OpenAPI document and its reference page.
 * Added to the caller's router, not a Router of their own: see app.ts for why.
 */
export function addDocsRoutes(router: IRouter): void {
  // Serialised once: the document is fixed for the life of the process.
  const openapiJson = JSON.stringify(openapiDocument);
  const referencePage = renderReferencePage(openapiDocument);
  router.get('/api/v1/openapi.json', (_req, res) => {
    res.type('application/json').send(openapiJson);
  });
  router.get('/docs', (_req, res) => {
    res.type('text/html').send(referencePage);
  });
}
