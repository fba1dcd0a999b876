// The proxy's closed address ranges as msb rules. msb's own groups are narrower than the proxy's (its
// `private` lacks 198.18.0.0/15 and fec0::/10, its `meta` is only 169.254.169.254, its `public` holds the
// documentation and reserved ranges), so the builder never relies on them: every closed range the proxy
// keeps shut becomes `deny@RANGE`, preceded by an allow for each keyword entry that opens it. NAT64 and 6to4
// spellings of closed IPv4 ranges are closed too, as the proxy judges them by the IPv4 address they carry.
import { CLOSED_RANGES, type AddressCategory } from "../../egress/address-ranges";
import { formatAddressTarget } from "../../egress/allow-entry";
import type { Cidr } from "../../egress/ip-address";

export type FloorRange = { category: AddressCategory; cidr: Cidr; target: string };

const NAT64_PREFIX = 0x64ff9bn << 96n;
const SIX_TO_FOUR_PREFIX = 0x2002n << 112n;

function range(category: AddressCategory, cidr: Cidr): FloorRange {
  return { category, cidr, target: formatAddressTarget(cidr) };
}

/** The range itself, and for IPv4 its NAT64 (64:ff9b::/96) and 6to4 (2002::/16) images. */
function spellings(category: AddressCategory, cidr: Cidr): FloorRange[] {
  if (cidr.family === 6) return [range(category, cidr)];
  return [
    range(category, cidr),
    range(category, { family: 6, value: NAT64_PREFIX | cidr.value, prefix: 96 + cidr.prefix }),
    range(category, { family: 6, value: SIX_TO_FOUR_PREFIX | (cidr.value << 80n), prefix: 16 + cidr.prefix }),
  ];
}

const ALL = CLOSED_RANGES.flatMap((r) => spellings(r.category, r.cidr));

/** Metadata first: it is exclusive (link-local and address entries never open it), so it is denied before them. */
export const METADATA_FLOOR: readonly FloorRange[] = ALL.filter((r) => r.category === "metadata");
export const OTHER_FLOOR: readonly FloorRange[] = ALL.filter((r) => r.category !== "metadata");
