-- Incremental runs append each (customer, day) once.
SELECT customer_id, day, count(*) AS rows_
FROM {{ ref('daily_funnels') }}
GROUP BY customer_id, day
HAVING count(*) > 1
