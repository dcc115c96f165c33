-- The price book with only the latest version of each row, withdrawn rows left out.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `card` | LowCardinality(String) | card type |
-- | `effective_from` | DateTime('UTC') | start of the price |
-- | `effective_to` | Nullable(DateTime('UTC')) | end of the price, exclusive; NULL: until the next row |
-- | `price_per_gpu_hour` | Decimal(18, 6) | price of one whole GPU for one hour |
-- | `currency` | String | ISO 4217 code |
-- | `note` | String | free text |
-- | `updated_at` | DateTime64(3, 'UTC') | when this version was written |

CREATE OR REPLACE VIEW {{.DB}}.price_book_current {{.OnCluster}} AS
SELECT
    p.card                                            AS card,
    p.effective_from                                  AS effective_from,
    argMax(tuple(p.effective_to), p.updated_at).1     AS effective_to,
    argMax(p.price_per_gpu_hour, p.updated_at)        AS price_per_gpu_hour,
    argMax(p.currency, p.updated_at)                  AS currency,
    argMax(p.note, p.updated_at)                      AS note,
    max(p.updated_at)                                 AS updated_at
FROM {{.DB}}.price_book AS p
GROUP BY p.card, p.effective_from
HAVING argMax(p.deleted, p.updated_at) = 0;
