import type { JsonSchema } from './schemas.ts';
import type { Scope } from './scopes.ts';

// The shapes of the OpenAPI 3.1 document's parts, as much of them as the document uses.

export type Ref = {
  $ref: string;
};
export interface Header {
  description: string;
  required?: boolean;
  schema: JsonSchema;
}
export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  description: string;
  required?: boolean;
  schema: JsonSchema;
  style?: 'form';
  explode?: boolean;
}
interface Example {
  summary: string;
  value: unknown;
}
interface MediaType {
  schema: JsonSchema;
  examples?: Record<string, Example>;
}
export interface Response {
  description: string;
  headers?: Record<string, Header | Ref>;
  content?: Record<string, MediaType>;
}
export interface Operation {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  security: Record<string, Scope[]>[];
  parameters?: (Parameter | Ref)[];
  requestBody?: { description: string; required: boolean; content: Record<string, MediaType> };
  responses: Record<string, Response | Ref>;
}
export type PathItem = Partial<Record<'get' | 'post', Operation>>;
export interface OpenApiDocument {
  openapi: '3.1.0';
  jsonSchemaDialect: string;
  info: { title: string; version: string; summary: string; description: string };
  servers: { url: string; description: string }[];
  tags: { name: string; description: string }[];
  security: Record<string, Scope[]>[];
  paths: Record<string, PathItem>;
  webhooks: Record<string, PathItem>;
  components: {
    schemas: Record<string, JsonSchema>;
    parameters: Record<string, Parameter>;
    headers: Record<string, Header>;
    responses: Record<string, Response>;
    securitySchemes: Record<string, { type: 'http'; scheme: 'bearer'; description: string }>;
  };
}
