// The in-process budget store (the default without Redis) against the BudgetStore contract.
import { createMemoryBudgetStore } from '../../src/store/memory-budget-store.js';
import { describeBudgetStoreContract } from './budget-store-contract.js';

describeBudgetStoreContract('memory', async () => createMemoryBudgetStore());
