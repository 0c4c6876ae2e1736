import { Router } from 'express';

/** The public contract: the OpenAPI document and its human-readable reference page. */
export function docsRouter(): Router {
  const router = Router();
  return router;
}
