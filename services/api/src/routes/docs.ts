import { Router } from 'express';
import { openapiDocument, renderReferencePage } from '@trips/contracts';

/** The public contract, readable without a key: the OpenAPI document and its reference page. */
export function docsRouter(): Router {
  const router = Router();
  // Serialised once: the document is fixed for the life of the process.
  const openapiJson = JSON.stringify(openapiDocument);
  const referencePage = renderReferencePage(openapiDocument);
  router.get('/api/v1/openapi.json', (_req, res) => {
    res.type('application/json').send(openapiJson);
  });
  router.get('/docs', (_req, res) => {
    res.type('text/html').send(referencePage);
  });
  return router;
}
