export * from './footprint';
export * from './images';
export * from './releases';
export * from './upstream';
export { helmFootprint, loadChart, mergeValues, evaluateExpression } from './helm';
export { kustomizeFootprint, KustomizePatch } from './kustomize';
export { parseTemplate, parseExpression, renderNodes, Unknown, UNKNOWN_TEXT } from './go-template';
