import { FifoMap } from 'toad-cache'

/**
 * toad-cache's FifoMap as the service's cache sizes mean it: `capacity` entries at most, the
 * oldest forgotten first, and a capacity of 0 keeps none (FifoMap's own 0 means no bound).
 */
export class BoundedFifo<V> extends FifoMap<V> {
  override set (key: string | number, value: V): void {
    if (this.max > 0) super.set(key, value)
  }
}
