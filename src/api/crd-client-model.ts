/**
 * The CRDs as @kubernetes/client-node models. The typed client serialises its own model classes: handed a
 * plain JSON manifest it drops every key whose model name differs from the wire name, which silently
 * strips `default` and every `x-kubernetes-*` extension (defaults, CEL rules, list types) from a CRD.
 * Pass these to `ApiextensionsV1Api.createCustomResourceDefinition` instead.
 */
import { loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { buildCrds, type CustomResourceDefinition } from './crds.ts';

export function crdClientModel(crd: CustomResourceDefinition): V1CustomResourceDefinition {
  // JSON is YAML; loadYaml deserialises by apiVersion and kind into the model the client serialises back.
  return loadYaml<V1CustomResourceDefinition>(JSON.stringify(crd));
}

export function crdClientModels(): V1CustomResourceDefinition[] {
  return buildCrds().map(crdClientModel);
}
