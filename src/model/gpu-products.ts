/**
 * What the toolkit knows of a GPU product, keyed by the `nvidia.com/gpu.product` label GPU Feature
 * Discovery sets (NVML's product name with spaces replaced by dashes, e.g. `NVIDIA-H100-80GB-HBM3`).
 */
export interface GpuProductFacts {
  /** The label value as described. */
  readonly product: string;
  /**
   * The GPUs of one node talk peer to peer over NVLink (an NVLink/NVSwitch fabric across the node, as
   * on HGX and DGX boards). false for PCIe cards, also those with NVLink bridges between pairs only.
   * Unknown products count as false: a check that forces NVLink would fail on them.
   */
  readonly nvlink: boolean;
  /** The table row that matched; undefined for an unknown product. */
  readonly family?: string;
}

interface ProductRow {
  readonly family: string;
  /** Matches the label value (after removing a MIG suffix). */
  readonly pattern: RegExp;
  readonly nvlink: boolean;
}

/**
 * NVLink per product family. Sources: NVIDIA's data sheets (SXM/HGX parts connect all GPUs of a board
 * through NVSwitch: A100 SXM4, H100 SXM5, H200 SXM, H20, B200, B300; PCIe parts have no NVLink or only
 * 2-way/4-way bridges: A100 PCIe, H100 PCIe, H100 NVL, H200 NVL, L40S, L40, L4, A10, A30, A40) and the
 * names NVML reports for them. Uncertain: label spellings of parts not seen on a node here (H20, B300,
 * B200 variants): their rows match by family name. Anything else is unknown and gets the plain check.
 */
const PRODUCTS: readonly ProductRow[] = [
  // PCIe variants first: their names also contain the family (A100, H100, H200).
  { family: 'A100 PCIe', pattern: /^NVIDIA-A100-(PCIE-|[0-9]+GB-PCIe)/i, nvlink: false },
  { family: 'H100 PCIe', pattern: /^NVIDIA-H100-PCIe/i, nvlink: false },
  { family: 'H100 NVL (PCIe, pair bridges)', pattern: /^NVIDIA-H100-NVL/i, nvlink: false },
  { family: 'H200 NVL (PCIe, bridges)', pattern: /^NVIDIA-H200-NVL/i, nvlink: false },
  { family: 'A100 SXM4', pattern: /^NVIDIA-A100-SXM4/i, nvlink: true },
  { family: 'H100 SXM5', pattern: /^NVIDIA-H100-(80GB-HBM3|SXM)/i, nvlink: true },
  { family: 'H200 SXM', pattern: /^NVIDIA-H200($|-[0-9]+GB|-SXM)/i, nvlink: true },
  { family: 'H20 (HGX)', pattern: /^NVIDIA-H20($|-)/i, nvlink: true },
  { family: 'B200 (HGX)', pattern: /^NVIDIA-B200($|-)/i, nvlink: true },
  { family: 'B300 (HGX)', pattern: /^NVIDIA-B300($|-)/i, nvlink: true },
  { family: 'L40S', pattern: /^NVIDIA-L40S($|-)/i, nvlink: false },
  { family: 'L40', pattern: /^NVIDIA-L40($|-)/i, nvlink: false },
  { family: 'L4', pattern: /^NVIDIA-L4($|-)/i, nvlink: false },
  { family: 'A10', pattern: /^NVIDIA-A10($|-)/i, nvlink: false },
  { family: 'A30', pattern: /^NVIDIA-A30($|-)/i, nvlink: false },
  { family: 'A40', pattern: /^NVIDIA-A40($|-)/i, nvlink: false },
];

/** Facts of a GPU product label value; a MIG strategy "single" suffix (`-MIG-<profile>`) is ignored. */
export function gpuProductFacts(product: string): GpuProductFacts {
  const base = product.replace(/-MIG-.*$/i, '');
  const row = PRODUCTS.find((r) => r.pattern.test(base));
  return { product, nvlink: row?.nvlink ?? false, family: row?.family };
}
