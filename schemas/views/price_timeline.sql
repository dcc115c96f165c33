-- The prices as the chargeback applies them: per card, periods that never overlap
-- (open-ended rows closed at the next row, overlaps given to the later row). An hour
-- starting at `h` is priced by the row with the latest `valid_from <= h`, if
-- `h < valid_to`.
--
-- | column | type | meaning |
-- | --- | --- | --- |
-- | `card` | LowCardinality(String) | card type |
-- | `valid_from` | DateTime('UTC') | first instant of the period |
-- | `valid_to` | DateTime('UTC') | end of the period, exclusive (2106-02-07 06:28:15 when open) |
-- | `price_per_gpu_hour` | Decimal(18, 6) | price of one whole GPU for one hour |
-- | `currency` | String | ISO 4217 code |

CREATE OR REPLACE VIEW {{.DB}}.price_timeline {{.OnCluster}} AS
SELECT card, valid_from, valid_to, price_per_gpu_hour, currency
FROM (
    SELECT
        b.card                                        AS card,
        b.effective_from                              AS valid_from,
        least(ifNull(b.effective_to, toDateTime(4294967295, 'UTC')),
              leadInFrame(b.effective_from, 1, toDateTime(4294967295, 'UTC'))
                  OVER (PARTITION BY b.card ORDER BY b.effective_from ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING)) AS valid_to,
        b.price_per_gpu_hour                          AS price_per_gpu_hour,
        b.currency                                    AS currency
    FROM {{.DB}}.price_book_current AS b
)
WHERE valid_to > valid_from;
